"""Secret files (``{fromFile: PATH}``) are confined and bounded: a path resolves, symlinks followed,
inside the project directory or a directory the project file lists under ``secretDirs:``; it
must be a regular file (never a FIFO, a device or ``/proc``) of at most 64 KiB. Every violation
is an error at the reference's ``file:line:col``, reported before anything is sent."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.model.errors import Location, ManifestError
from reconciler.model.resources import FixedLocator, Resource
from reconciler.model.secretfiles import MAX_SECRET_FILE_BYTES, SecretFiles, secret_files
from reconciler.model.secrets import Secret, resolve_tree
from tests.support.cli import SECRET_ENV, run_cli, writes
from tests.support.emulator import Emulator
from tests.support.manifests import KAFKA_PIPE, replace_line

VALUE = "s3cret-FILE-VALUE-4417"
WHERE = Location("pipes/orders.yaml", 14, 19)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with a manifest directory, a secret inside and a file outside."""
    root = tmp_path / "project"
    (root / "pipes" / "secrets").mkdir(parents=True)
    (root / "pipes" / "secrets" / "key").write_text(VALUE + "\n", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("outside-SECRET\n", encoding="utf-8")
    (tmp_path / "mounted").mkdir()
    (tmp_path / "mounted" / "key").write_text(VALUE, encoding="utf-8")
    return root


def _resolve(project: Path, path: str, *extra: Path) -> Secret | ManifestError:
    manifest = project / "pipes" / "orders.yaml"
    resource = Resource("Pipe", "orders", {}, str(manifest), locator=FixedLocator(WHERE))
    with secret_files(SecretFiles((project, *extra))):
        try:
            resolved = resolve_tree(resource, ("source",), {"fromFile": path})
        except ManifestError as exc:
            return exc
    assert isinstance(resolved, Secret)
    return resolved


def _symlink_out(project: Path) -> str:
    (project / "pipes" / "link").symlink_to(project.parent / "outside.txt")
    return "link"


def _symlink_to_zero(project: Path) -> str:
    (project / "pipes" / "zero").symlink_to("/dev/zero")
    return "zero"


def _fifo(project: Path) -> str:
    os.mkfifo(project / "pipes" / "fifo")
    return "fifo"


def _oversized(project: Path) -> str:
    (project / "pipes" / "big").write_bytes(b"x" * (MAX_SECRET_FILE_BYTES + 1))
    return "big"


def _directory(project: Path) -> str:
    return "secrets"


def _given(path: str) -> Callable[[Path], str]:
    return lambda project: path


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        pytest.param(_given("/etc/hostname"), "outside the project directory", id="absolute"),
        pytest.param(_given("../../outside.txt"), "outside the project directory", id="dotdot"),
        pytest.param(_symlink_out, "outside the project directory", id="symlink-escape"),
        pytest.param(_given("/proc/self/environ"), "outside the project directory", id="proc"),
        pytest.param(_given("/dev/zero"), "outside the project directory", id="dev-zero"),
        pytest.param(_symlink_to_zero, "outside the project directory", id="symlink-dev-zero"),
        pytest.param(_fifo, "is not a regular file (a FIFO)", id="fifo"),
        pytest.param(_directory, "is not a regular file (a directory)", id="directory"),
        pytest.param(_oversized, "is larger than 64 KiB", id="oversized"),
    ],
)
def test_a_secret_file_outside_the_project_or_not_a_small_regular_file_is_refused_where_named(
    project: Path, make: Callable[[Path], str], problem: str
) -> None:
    found = _resolve(project, make(project))
    assert isinstance(found, ManifestError)
    assert str(found).startswith("pipes/orders.yaml:14:19: spec.source: ")
    assert problem in str(found)
    assert "SECRET" not in str(found) and VALUE not in str(found)


def test_a_secret_file_inside_the_project_is_read_up_to_the_cap(project: Path) -> None:
    assert _resolve(project, "secrets/key") == Secret(VALUE)
    (project / "pipes" / "full").write_bytes(b"y" * MAX_SECRET_FILE_BYTES)
    assert _resolve(project, "full") == Secret("y" * MAX_SECRET_FILE_BYTES)


def test_a_secret_dir_admits_its_files_directly_and_through_a_symlink(project: Path) -> None:
    mounted = project.parent / "mounted"
    assert _resolve(project, str(mounted / "key"), mounted) == Secret(VALUE)
    (project / "pipes" / "mounted-key").symlink_to(mounted / "key")
    assert _resolve(project, "mounted-key", mounted) == Secret(VALUE)
    refused = _resolve(project, str(mounted / "key"))
    assert isinstance(refused, ManifestError) and "secretDirs" in str(refused)


def test_a_device_is_refused_even_inside_a_secret_dir(project: Path) -> None:
    found = _resolve(project, "/dev/zero", Path("/dev"))
    assert isinstance(found, ManifestError)
    assert "is not a regular file (a character device)" in str(found)


def _write_project(root: Path, password: str, extra: str = "") -> None:
    text = replace_line(
        KAFKA_PIPE,
        "password: {fromFile: secrets/kafka-password}",
        f"password: {{fromFile: {password}}}",
    )
    (root / "pipes" / "orders.yaml").write_text(text, encoding="utf-8")
    (root / "reconcile.yaml").write_text(f"manifests: [pipes]\n{extra}", encoding="utf-8")


@pytest.fixture
def found_upwards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the command line find the project file from the current directory upwards."""
    monkeypatch.delenv("RECONCILE_CONFIG")


def test_validate_check_env_refuses_a_fifo_at_once_instead_of_hanging(project: Path) -> None:
    _write_project(project, "fifo")
    os.mkfifo(project / "pipes" / "fifo")
    done = subprocess.run(
        [sys.executable, "-m", "reconciler", "validate", "--check-env"],
        cwd=project,
        env={k: v for k, v in {**os.environ, **SECRET_ENV}.items() if k != "RECONCILE_CONFIG"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pipes/orders.yaml:13:20: spec.source.kafka.credentials.password: " in done.stdout
    assert "is not a regular file (a FIFO)" in done.stdout


@pytest.mark.usefixtures("found_upwards")
def test_apply_sends_nothing_when_a_secret_file_is_proc_self_environ(
    emulator: Emulator, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_project(project, "/proc/self/environ")
    monkeypatch.chdir(project)
    result = run_cli(["apply", "--auto-approve", "--state", "state.json"], emulator.env())
    assert result.exit_code == 1, result.output
    assert "pipes/orders.yaml:13:20: spec.source.kafka.credentials.password: " in result.stderr
    assert (
        "/proc/self/environ" in result.stderr and "outside the project directory" in result.stderr
    )
    assert not writes(emulator.requests())


@pytest.mark.usefixtures("found_upwards")
def test_the_project_file_lists_secret_dirs_relative_to_itself(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounted = project.parent / "mounted"
    _write_project(project, str(mounted / "key"), "secretDirs: [../mounted]\n")
    monkeypatch.chdir(project / "pipes")  # the project file is found upwards
    result = run_cli(["validate", "--check-env"], {})
    assert result.exit_code == 0, result.output
    shown = run_cli(["config"], {})
    assert "secretDirs" in shown.output and "mounted" in shown.output, shown.output
    _write_project(project, str(mounted / "key"))
    refused = run_cli(["validate", "--check-env"], {})
    assert refused.exit_code == 1 and "secretDirs" in refused.output, refused.output


@pytest.mark.usefixtures("found_upwards")
def test_secret_dirs_must_be_a_list_of_paths(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_project(project, "secrets/key", "secretDirs: /run/secrets\n")
    monkeypatch.chdir(project)
    result = run_cli(["validate"], {})
    assert result.exit_code == 1
    assert "reconcile.yaml:2:1: secretDirs: expected a list" in result.stderr, result.stderr


@pytest.mark.usefixtures("found_upwards")
def test_a_credential_file_of_an_environment_is_confined_too(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_project(
        project,
        "secrets/key",
        "environments:\n  prod:\n    keyId: {fromEnv: K}\n    keySecret: {fromFile: /proc/self/environ}\n",
    )
    monkeypatch.chdir(project)
    result = run_cli(["plan", "--env", "prod", "--state", "s.json"], {"K": "id"})
    assert result.exit_code == 1
    assert "reconcile.yaml:5" in result.stderr and "outside the project directory" in result.stderr


@pytest.mark.usefixtures("found_upwards")
def test_the_size_cap_is_set_in_the_project_file_or_its_variable(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pipes" / "secrets" / "key").write_text("k" * 2048, encoding="utf-8")
    _write_project(project, "secrets/key", "limits: {maxSecretFileSize: 1KiB}\n")
    monkeypatch.chdir(project)
    refused = run_cli(["validate", "--check-env"], {})
    assert refused.exit_code == 1, refused.output
    assert "secret file pipes/secrets/key is larger than 1 KiB" in refused.output
    allowed = run_cli(["validate", "--check-env"], {"RECONCILE_MAX_SECRET_FILE_SIZE": "4KiB"})
    assert allowed.exit_code == 0, allowed.output
    wrong = run_cli(["validate", "--check-env"], {"RECONCILE_MAX_SECRET_FILE_SIZE": "lots"})
    assert wrong.exit_code == 1 and "RECONCILE_MAX_SECRET_FILE_SIZE" in wrong.output, wrong.output


def test_the_default_size_cap_is_64_kib_in_the_settings_table_too() -> None:
    from reconciler.client.defaults import parse_size
    from reconciler.settings.table import default_of, setting_named

    default = default_of(setting_named("limits.maxSecretFileSize"))
    assert parse_size(str(default)) == MAX_SECRET_FILE_BYTES == 64 * 1024
