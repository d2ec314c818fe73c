"""Machine output on every path: `-o json` prints exactly one JSON document (with `errors[]` and
the exit code) on success and on every error, `-o markdown` renders errors, and no user error
ends in a traceback (`--out` into a missing directory, `--debug` anywhere on the line)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from reconciler.state.local import locked_state
from tests.support.cli import pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def _schema(name: str) -> Any:
    return json.loads((SCHEMAS / name).read_text(encoding="utf-8"))


def _invalid(root: Path) -> Path:
    write_manifest(root / "bad.yaml", "Pipe", "bad", pipe_spec(settings={"engine_max_threads": 65}))
    return root


def _only_document(stdout: str) -> Any:
    document = json.loads(stdout)  # raises when stdout holds anything but one JSON document
    assert isinstance(document, dict)
    return document


def _checked(result: Any, code: int, schema: str) -> Any:
    """Assert the exit code; return stdout's one document, validated against ``schema``."""
    assert result.exit_code == code, result.output
    document = _only_document(result.stdout)
    jsonschema.validate(document, _schema(schema))
    return document


def _pipe(tmp_path: Path, threads: int = 9) -> Path:
    """Write one pipe manifest changing engine_max_threads; return its directory."""
    spec = pipe_spec(settings={"engine_max_threads": threads})
    write_manifest(tmp_path / "m" / "o.yaml", "Pipe", "o", spec)
    return tmp_path / "m"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_plan_json_with_an_invalid_manifest_prints_one_document_with_located_errors(
    emulator: Emulator, tmp_path: Path
) -> None:
    result = run_cli(
        ["plan", str(_invalid(tmp_path / "m")), "-o", "json", "--state", str(tmp_path / "s")],
        emulator.env(),
    )
    document = _checked(result, 1, "plan.schema.json")
    assert document["exitCode"] == 1 and document["actions"] == []
    [error] = document["errors"]
    assert error["file"].endswith("bad.yaml") and error["line"] > 0 and error["col"] > 0
    assert error["path"] == "spec.settings.engine_max_threads"
    assert emulator.requests() == []


def test_plan_markdown_with_an_invalid_manifest_renders_the_errors(
    emulator: Emulator, tmp_path: Path
) -> None:
    result = run_cli(
        ["plan", str(_invalid(tmp_path / "m")), "-o", "markdown", "--state", str(tmp_path / "s")],
        emulator.env(),
    )
    assert result.exit_code == 1
    assert "### reconcile plan" in result.stdout
    assert "bad.yaml:" in result.stdout and "engine_max_threads" in result.stdout


def test_plan_json_when_the_server_refuses_connections_prints_one_document(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "o.yaml", "Pipe", "o", pipe_spec())
    env = {**emulator.env(), "RECONCILE_BASE_URL": f"http://127.0.0.1:{_closed_port()}"}
    result = run_cli(
        ["plan", str(tmp_path / "m"), "-o", "json", "--state", str(tmp_path / "s")], env
    )
    document = _checked(result, 1, "plan.schema.json")
    assert document["errors"] and document["exitCode"] == 1


@pytest.mark.parametrize(
    ("command", "schema"), [("plan", "plan.schema.json"), ("apply", "apply-result.schema.json")]
)
def test_refused_credentials_in_json_are_one_auth_error_naming_status_and_interface(
    emulator: Emulator, tmp_path: Path, command: str, schema: str
) -> None:
    args = [command, str(_pipe(tmp_path)), "-o", "json", "--state", str(tmp_path / "s")]
    if command == "apply":
        args.append("--auto-approve")
    result = run_cli(args, {**emulator.env(), "RECONCILE_KEY_SECRET": "wrong"})
    document = _checked(result, 1, schema)
    [error] = document["errors"]
    assert (error["type"], error["status"], error["interface"]) == (
        "AuthenticationFailed",
        401,
        "management",
    )
    assert error["requestId"] and error["message"] == result.stderr.removeprefix("Error: ").strip()


def test_plan_json_success_carries_an_empty_error_list_and_the_exit_code(
    emulator: Emulator, tmp_path: Path
) -> None:
    _pipe(tmp_path)
    result = run_cli(
        [
            "plan",
            str(tmp_path / "m"),
            "-o",
            "json",
            "--detailed-exitcode",
            "--state",
            str(tmp_path / "s"),
        ],
        emulator.env(),
    )
    assert result.exit_code == 2
    document = _only_document(result.stdout)
    assert document["errors"] == [] and document["exitCode"] == 2


def test_apply_json_when_the_lock_is_held_prints_one_result_document(
    emulator: Emulator, tmp_path: Path
) -> None:
    _pipe(tmp_path)
    state = tmp_path / "state.json"
    with locked_state(state):
        result = run_cli(
            ["apply", str(tmp_path / "m"), "--auto-approve", "-o", "json", "--state", str(state)],
            emulator.env(),
        )
    document = _checked(result, 1, "apply-result.schema.json")
    assert "locked" in document["errors"][0]["message"] and document["exitCode"] == 1


@pytest.mark.parametrize("broken", ["manifest", "stale"])
def test_apply_json_on_manifest_errors_and_stale_plans_prints_one_result_document(
    emulator: Emulator, tmp_path: Path, broken: str
) -> None:
    state, saved = tmp_path / "state.json", tmp_path / "p.plan"
    root = tmp_path / "m"
    write_manifest(root / "o.yaml", "Pipe", "o", pipe_spec(settings={"engine_max_threads": 9}))
    if broken == "manifest":
        args = ["apply", str(_invalid(root)), "--auto-approve", "-o", "json", "--state", str(state)]
    else:
        assert (
            run_cli(
                ["plan", str(root), "--out", str(saved), "--state", str(state)], emulator.env()
            ).exit_code
            == 0
        )
        write_manifest(root / "o.yaml", "Pipe", "o", pipe_spec(settings={"engine_max_threads": 3}))
        assert (
            run_cli(
                ["apply", str(root), "--auto-approve", "--state", str(state)], emulator.env()
            ).exit_code
            == 0
        )
        args = [
            "apply",
            "--plan",
            str(saved),
            "--auto-approve",
            "-o",
            "json",
            "--state",
            str(state),
        ]
    result = run_cli(args, emulator.env())
    document = _checked(result, 1, "apply-result.schema.json")
    assert document["errors"] and document["exitCode"] == 1


def test_apply_json_success_validates_against_the_apply_result_schema(
    emulator: Emulator, tmp_path: Path
) -> None:
    _pipe(tmp_path)
    result = run_cli(
        [
            "apply",
            str(tmp_path / "m"),
            "--auto-approve",
            "-o",
            "json",
            "--state",
            str(tmp_path / "s"),
        ],
        emulator.env(),
    )
    document = _checked(result, 0, "apply-result.schema.json")
    assert document["errors"] == [] and document["exitCode"] == 0


def test_plan_out_into_a_missing_directory_creates_it(emulator: Emulator, tmp_path: Path) -> None:
    write_manifest(tmp_path / "m" / "o.yaml", "Pipe", "o", pipe_spec())
    out = tmp_path / "no" / "such" / "dir" / "p.json"
    result = run_cli(
        ["plan", str(tmp_path / "m"), "--out", str(out), "--state", str(tmp_path / "s")],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["formatVersion"] == 1


def test_plan_out_to_an_unwritable_place_is_a_clean_error(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "o.yaml", "Pipe", "o", pipe_spec())
    (tmp_path / "file").write_text("x")
    result = run_cli(
        [
            "plan",
            str(tmp_path / "m"),
            "--out",
            str(tmp_path / "file" / "p.json"),
            "--state",
            str(tmp_path / "s"),
        ],
        emulator.env(),
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.stderr.startswith("Error: ") and "p.json" in result.stderr


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_is_accepted_before_or_after_the_subcommand(tmp_path: Path, where: str) -> None:
    root = _invalid(tmp_path / "m")
    plan = ["plan", str(root), "--state", str(tmp_path / "s")]
    args = ["--debug", *plan] if where == "before" else [*plan, "--debug"]
    env = {
        "RECONCILE_KEY_ID": "k",
        "RECONCILE_KEY_SECRET": "s",
        "RECONCILE_BASE_URL": "http://127.0.0.1:9",
    }
    result = run_cli(args, env)
    assert result.exit_code == 1
    assert "no such option" not in result.output.lower()
    assert "Traceback" in result.stderr and "engine_max_threads" in result.output
