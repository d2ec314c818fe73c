"""``reconcile validate``: exit codes, text and JSON output, the examples, the default org.

Drives the click command in-process with ``CliRunner`` (``standalone_mode=False`` so the
command's returned exit code is visible), plus one real subprocess run of the example
manifests through ``python -m reconciler``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli import cli
from tests.support.cli import run_cli
from tests.support.manifests import EXAMPLES, KAFKA_PIPE, ORG, replace_line, write

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    """Invoke ``reconcile validate`` in-process and return the result."""
    return CliRunner().invoke(cli, ["validate", *args], standalone_mode=False, env=env)


def test_validate_should_accept_every_example_manifest() -> None:
    result = run(str(EXAMPLES))
    assert result.exception is None, result.output
    assert result.return_value == 0
    assert result.output == (
        "12 manifests valid (8 Pipe, 1 Organization, 1 Dashboard, 1 ReversePrivateEndpoint, "
        "1 CdcScaling)\n"
    )


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.yaml")), ids=lambda p: p.name)
def test_validate_should_accept_each_example_file_with_its_modeline(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    depth = len(path.relative_to(EXAMPLES).parts) - 1
    assert first.startswith(f"# yaml-language-server: $schema={'../' * (depth + 1)}schemas/")
    assert (path.parent / first.split("=", 1)[1]).resolve().is_file()
    assert run(str(path)).return_value == 0


def test_validate_should_print_errors_and_count_and_return_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "p.yaml", replace_line(KAFKA_PIPE, "wait_ms: 5000", "wait_ms: 70000"))
    result = run("p.yaml")
    assert result.return_value == 1
    assert result.output.splitlines() == [
        "p.yaml:17:5: spec.settings.streaming_max_insert_wait_ms: 70000 is greater than the"
        " maximum of 60000",
        "1 error in 1 file",
    ]


def test_validate_json_output_should_list_errors_as_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        "p.yaml",
        replace_line(KAFKA_PIPE, "engine_max_threads: 4", "engine_max_threads: x"),
    )
    result = run("p.yaml", "--output", "json")
    assert result.return_value == 1
    assert json.loads(result.output) == {
        "formatVersion": 1,
        "exitCode": 1,
        "valid": False,
        "errors": [
            {
                "type": "ManifestError",
                "file": "p.yaml",
                "line": 18,
                "col": 5,
                "path": "spec.settings.engine_max_threads",
                "message": "expected an integer, got string 'x'",
            }
        ],
        "resources": [],
    }


def test_validate_json_output_should_list_resources_when_valid() -> None:
    body = json.loads(run(str(EXAMPLES), "-o", "json").output)
    assert body["valid"] is True and body["errors"] == []
    assert {(r["kind"], r["name"]) for r in body["resources"]} == {
        ("Organization", "acme"),
        ("Pipe", "orders"),
        ("Pipe", "events-archive"),
        ("Pipe", "returns"),
        ("Pipe", "clickstream"),
        ("Pipe", "customers-cdc"),
        ("Pipe", "payments"),
        ("Pipe", "telemetry"),
        ("Pipe", "audit-log"),
        ("Dashboard", "pipes-overview"),
        ("ReversePrivateEndpoint", "orders-brokers"),
        ("CdcScaling", "analytics-cdc"),
    }


def test_validate_should_take_default_organization_from_option_or_env(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", replace_line(KAFKA_PIPE, f"  organizationId: {ORG}\n", ""))
    assert run(str(path)).return_value == 1
    assert run(str(path), "--organization", ORG).return_value == 0
    assert run(str(path), env={"RECONCILE_ORGANIZATION_ID": ORG}).return_value == 0


def test_validate_should_report_missing_path() -> None:
    result = run("does/not/exist")
    assert result.return_value == 1
    assert result.output.startswith("does/not/exist: no such file or directory\n")


def test_validate_should_exit_with_code_as_a_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler", "validate", "manifests", "nope.yaml"],
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "1 error in 1 file"
    ok = subprocess.run(
        [sys.executable, "-m", "reconciler", "validate", "manifests"],
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([str(EXAMPLES)], 0),
        (["does/not/exist"], 1),
        ([str(EXAMPLES), "--organization", "x"], 1),
        ([], 1),
    ],
    ids=["valid", "invalid-manifest", "error-outside-manifests", "usage-error"],
)
def test_validate_json_carries_exit_code_and_typed_errors_like_every_other_command(
    args: list[str], code: int
) -> None:
    # Every other command's machine output has exitCode and errors[] with a type on each entry;
    # validate's document lacked exitCode on every path.
    result = run_cli(["validate", *args, "-o", "json"], {})
    assert result.exit_code == code
    document = result.json()
    assert document["exitCode"] == code and document["formatVersion"] == 1
    assert document["valid"] is (code == 0)
    assert all(entry["type"] and entry["message"] for entry in document["errors"])
    assert bool(document["errors"]) is (code != 0)


@pytest.mark.parametrize("setting", ["2", "many"])
def test_the_removed_reader_count_variable_should_be_ignored_with_one_deprecation_line(
    tmp_path: Path, setting: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reconciler", "validate", str(EXAMPLES)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "RECONCILE_LOAD_WORKERS": setting, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("RECONCILE_LOAD_WORKERS is deprecated and has no effect") == 1
