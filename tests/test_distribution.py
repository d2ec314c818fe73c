"""The release as the package index will carry it: ``reconcile-pipes``, a wheel and an sdist.

Built by ``python -m build`` (the wheel from the sdist), checked by ``twine check`` and
``check-wheel-contents``, and installed by name into a fresh venv outside the checkout, where
``reconcile`` must run every command that reads a data file of the package: ``validate`` and
``explain`` (the JSON Schemas), ``init`` (the project templates), and ``emulator`` + ``plan``.
The version is declared once (pyproject.toml) and follows SemVer.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.support.dist import DISTRIBUTION, REPO, Dist, as_a_user, project_version
from tests.support.emulator import start_emulator, stop_emulator
from tests.support.manifests import EXAMPLES

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$")


def installed(
    bin_dir: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``reconcile ARGS`` in ``cwd`` (nothing of the checkout in reach)."""
    command = [str(bin_dir / "reconcile"), *args]
    done = as_a_user(command, cwd, env, hide=("PYTHONPATH", "VIRTUAL_ENV"))
    print(f"$ reconcile {' '.join(args)}  -> exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done


def test_the_version_is_declared_once_in_pyproject_and_follows_semver() -> None:
    version = project_version()
    assert SEMVER.match(version), version
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog and f"## [{version}]" in changelog
    sources = [p for p in (REPO / "reconciler").rglob("*.py") if version in p.read_text()]
    assert sources == []  # read from the installed metadata, never written in the code


def test_the_wheel_and_sdist_pass_the_package_index_checks(distribution: Dist) -> None:
    twine = subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "check",
            "--strict",
            str(distribution.wheel),
            str(distribution.sdist),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert twine.returncode == 0, twine.stdout + twine.stderr
    assert twine.stdout.count("PASSED") == 2, twine.stdout
    contents = subprocess.run(
        [sys.executable, "-m", "check_wheel_contents", str(distribution.wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert contents.returncode == 0, contents.stdout + contents.stderr
    assert contents.stdout.strip().endswith(": OK"), contents.stdout


def test_the_wheel_carries_every_schema_and_template_and_the_sdist_nothing_else(
    distribution: Dist,
) -> None:
    wheel = set(zipfile.ZipFile(distribution.wheel).namelist())
    schemas = {f"reconciler/_schemas/{p.name}" for p in (REPO / "schemas").glob("*.json")}
    templates = {
        f"reconciler/settings/templates/{p.name}"
        for p in (REPO / "reconciler" / "settings" / "templates").iterdir()
    }
    assert len(schemas) >= 9 and schemas <= wheel, sorted(schemas - wheel)
    assert len(templates) >= 9 and templates <= wheel, sorted(templates - wheel)
    metadata = zipfile.ZipFile(distribution.wheel).read(
        f"reconcile_pipes-{project_version()}.dist-info/METADATA"
    )
    assert f"Name: {DISTRIBUTION}\n".encode() in metadata
    with tarfile.open(distribution.sdist) as sdist:
        tops = {name.split("/")[1] for name in sdist.getnames() if name.count("/") >= 1}
    assert tops == {
        ".gitignore",  # the build backend always adds it
        "reconciler",
        "schemas",
        "README.md",
        "CHANGELOG.md",
        "pyproject.toml",
        "PKG-INFO",
    }, tops


def test_the_release_installed_by_name_outside_the_checkout_runs_every_command(
    installed_bin: Path, tmp_path: Path
) -> None:
    where = subprocess.run(
        [str(installed_bin / "python"), "-c", "import reconciler; print(reconciler.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert not Path(where).is_relative_to(REPO) and Path(where).is_relative_to(
        installed_bin.parent
    ), where
    version = installed(installed_bin, tmp_path, "version")
    assert version.returncode == 0 and version.stdout == f"reconcile {project_version()}\n"

    shutil.copytree(EXAMPLES, tmp_path / "manifests")
    validated = installed(installed_bin, tmp_path, "validate", "manifests")
    assert validated.returncode == 0, validated.stderr
    assert "manifests valid" in validated.stdout

    explained = installed(installed_bin, tmp_path, "explain", "Pipe.spec.source.kafka.offset")
    assert explained.returncode == 0, explained.stderr
    assert "strategy" in explained.stdout

    made = installed(installed_bin, tmp_path, "init", "project")
    assert made.returncode == 0 and "9 created, 0 skipped." in made.stdout, made.stdout
    project = tmp_path / "project"
    emulator = start_emulator(program=[str(installed_bin / "reconcile")], cwd=tmp_path)
    try:
        planned = installed(
            installed_bin, project, "plan", "--detailed-exitcode", env=emulator.env()
        )
        assert planned.returncode == 2, planned.stdout + planned.stderr
        assert "Plan: 2 to create" in planned.stdout
        examples = installed(
            installed_bin,
            tmp_path,
            "plan",
            "manifests",
            "--state",
            str(tmp_path / "examples-state.json"),
            "--env-file",
            str(EXAMPLES / ".env.example"),
            env=emulator.env(),
        )
        assert examples.returncode == 0, examples.stdout + examples.stderr
        assert "Plan:" in examples.stdout
    finally:
        stop_emulator(emulator)
