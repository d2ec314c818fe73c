"""Errors a new user meets point at the cause: a wrong organization, missing or empty secrets,
bad URLs and variable values, through the real CLI and the emulator."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.cli import pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES
from tests.support.seed_ids import KAFKA_MUTUAL_TLS_PIPE, ORG_ID, OTHER_ORG_ID

WRONG_ORG = "11111111-2222-4333-8444-555555555555"


def _line_of(path: Path, text: str) -> int:
    """Return the 1-based line of ``path`` holding ``text``."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def _plan(emulator: Emulator, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = run_cli(["plan", *args], {**emulator.env(), **(env or {})})
    return result.exit_code, result.output


# -- 1: a wrong organization is an error of its resources, not of the key -------------------


def test_a_manifest_naming_an_organization_the_key_cannot_access_is_an_error_of_that_resource(
    emulator: Emulator, tmp_path: Path
) -> None:
    wrong = write_manifest(
        tmp_path / "a-wrong.yaml",
        "Pipe",
        "elsewhere",
        {**pipe_spec(settings={"engine_max_threads": 6}), "organizationId": WRONG_ORG},
    )
    write_manifest(
        tmp_path / "b-orders.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 6})
    )
    result = run_cli(["plan", str(tmp_path), "-o", "json"], emulator.env())
    assert result.exit_code == 1, result.output
    doc = result.json()
    by_key = {a["resource"]: a for a in doc["actions"]}
    assert by_key["Pipe/orders"]["operation"] == "update"
    refused = by_key["Pipe/elsewhere"]
    assert refused["operation"] == "error"
    message = " ".join(refused["errors"])
    assert f"Key is not allowed to access organization {WRONG_ORG}" in message
    assert f"{wrong}:{_line_of(wrong, WRONG_ORG)}" in message
    assert "spec.organizationId" in message
    assert "refused the credentials" not in result.output


def test_a_wrong_default_organization_names_the_variable_that_chose_it(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(settings={"engine_max_threads": 6})
    del spec["organizationId"]
    write_manifest(tmp_path / "a.yaml", "Pipe", "defaulted", spec)
    write_manifest(
        tmp_path / "b.yaml", "Pipe", "pinned", pipe_spec(settings={"engine_max_threads": 6})
    )
    env = {"RECONCILE_ORGANIZATION_ID": OTHER_ORG_ID}
    result = run_cli(["plan", str(tmp_path)], {**emulator.env(), **env})
    assert result.exit_code == 1, result.output
    assert f"Key is not allowed to access organization {OTHER_ORG_ID}" in result.output
    assert "RECONCILE_ORGANIZATION_ID" in result.output
    assert "refused the credentials" not in result.output
    assert "~ pipe pinned" in result.output
    flagged = run_cli(["plan", str(tmp_path), "--organization", WRONG_ORG], emulator.env())
    assert flagged.exit_code == 1
    assert "--organization" in flagged.output
    assert "~ pipe pinned" in flagged.output


def test_a_refused_key_still_stops_the_run(emulator: Emulator, tmp_path: Path) -> None:
    write_manifest(tmp_path / "a.yaml", "Pipe", "orders", pipe_spec(settings={}))
    code, output = _plan(emulator, str(tmp_path), env={"RECONCILE_KEY_SECRET": "wrong"})
    assert code == 1
    assert "refused the credentials (HTTP 401" in output


# -- 2-3: every missing or empty secret, at once, before any request -------------------------


AUDIT = EXAMPLES / "pipes" / "audit-log.yaml"


def _secret_manifests(tmp_path: Path) -> tuple[Path, Path]:
    orders = write_manifest(
        tmp_path / "orders.yaml",
        "Pipe",
        "orders",
        pipe_spec(
            source={
                "kafka": {
                    "credentials": {
                        "username": {"fromEnv": "KAFKA_USER"},
                        "password": {"fromEnv": "KAFKA_PASSWORD"},
                    }
                }
            }
        ),
    )
    audit = write_manifest(
        tmp_path / "audit.yaml",
        "Pipe",
        "audit-log",
        pipe_spec(
            pipe_id=KAFKA_MUTUAL_TLS_PIPE,
            source={
                "kafka": {
                    "authentication": "MUTUAL_TLS",
                    "credentials": {
                        "certificate": {"fromEnv": "AUDIT_CERT_UNSET"},
                        "privateKey": {"fromFile": "missing/private.key"},
                    },
                }
            },
        ),
    )
    return orders, audit


def test_plan_reports_every_missing_or_empty_secret_at_once_and_sends_nothing(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project directory (secret files are read inside it)
    orders, audit = _secret_manifests(tmp_path)
    env = {"KAFKA_USER": "", "KAFKA_PASSWORD": ""}
    for command in (["plan"], ["apply", "--auto-approve"]):
        result = run_cli(
            [*command, str(tmp_path), "--state", str(tmp_path / "s.json")],
            {**emulator.env(), **env},
        )
        assert result.exit_code == 1, result.output
        out = result.output
        assert f"{orders}:{_line_of(orders, 'KAFKA_USER')}" in out
        assert "environment variable KAFKA_USER is empty" in out
        assert f"{orders}:{_line_of(orders, 'KAFKA_PASSWORD')}" in out
        assert "environment variable KAFKA_PASSWORD is empty" in out
        assert f"{audit}:{_line_of(audit, 'AUDIT_CERT_UNSET')}" in out
        assert "environment variable AUDIT_CERT_UNSET is not set" in out
        assert f"{audit}:{_line_of(audit, 'private.key')}" in out
        assert "cannot read secret file" in out
        assert "failed" not in out
        assert emulator.requests() == []


def test_an_explicitly_allowed_empty_secret_is_sent(emulator: Emulator, tmp_path: Path) -> None:
    write_manifest(
        tmp_path / "orders.yaml",
        "Pipe",
        "orders",
        pipe_spec(
            source={
                "kafka": {
                    "credentials": {
                        "username": {"fromEnv": "KAFKA_USER"},
                        "password": {"fromEnv": "KAFKA_PASSWORD", "allowEmpty": True},
                    }
                }
            }
        ),
    )
    code, output = _plan(emulator, str(tmp_path), env={"KAFKA_PASSWORD": ""})
    assert code == 0, output
    assert "(sensitive value changed)" in output
    assert run_cli(["validate", str(tmp_path)], {}).exit_code == 0


def test_validate_check_env_reports_missing_and_empty_secrets_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project directory (secret files are read inside it)
    orders, audit = _secret_manifests(tmp_path)
    env = {"KAFKA_USER": "", "KAFKA_PASSWORD": ""}
    plain = run_cli(["validate", str(tmp_path)], env)
    assert plain.exit_code == 0, plain.output
    result = run_cli(["validate", "--check-env", str(tmp_path)], env)
    assert result.exit_code == 1, result.output
    assert f"{orders}:{_line_of(orders, 'KAFKA_USER')}" in result.output
    assert "KAFKA_PASSWORD is empty" in result.output
    assert f"{audit}:{_line_of(audit, 'AUDIT_CERT_UNSET')}" in result.output
    assert "cannot read secret file" in result.output
    assert "4 errors in 2 files" in result.output
    doc = run_cli(["validate", "--check-env", "-o", "json", str(tmp_path)], env).json()
    assert doc["exitCode"] == 1 and len(doc["errors"]) == 4
    assert {e["line"] for e in doc["errors"]} >= {_line_of(orders, "KAFKA_USER")}
    ok = run_cli(["validate", "--check-env", str(tmp_path)], {"AUDIT_CERT_UNSET": "c"})
    assert ok.exit_code == 1 and "1 error in 1 file" in ok.output


# -- 4: a bad URL or variable value names its variable ---------------------------------------


def test_a_url_with_a_bad_port_is_a_clean_error_naming_its_variable(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "a.yaml", "Pipe", "orders", pipe_spec(settings={}))
    url = "http://localhost:37377x"
    code, output = _plan(emulator, str(tmp_path), env={"RECONCILE_BASE_URL": url})
    assert code == 1
    assert "internal error" not in output
    assert "RECONCILE_BASE_URL" in output and "37377x" in output
    code, output = _plan(emulator, str(tmp_path), "--dashboards-url", url)
    assert code == 1
    assert "internal error" not in output
    assert "--dashboards-url" in output


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_unreachable_hint_names_the_variable_that_set_the_dashboards_url(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(
        tmp_path / "d.yaml",
        "Dashboard",
        "overview",
        {"name": "Overview", "tiles": []},
    )
    dead = f"http://127.0.0.1:{_closed_port()}"
    env = {"RECONCILE_BASE_URL": dead, "RECONCILE_DASHBOARDS_URL": dead}
    code, output = _plan(emulator, str(tmp_path), env=env)
    assert code == 1
    assert "cannot reach the dashboards API" in output
    assert "Check RECONCILE_DASHBOARDS_URL" in output
    shared = {"RECONCILE_BASE_URL": dead, "RECONCILE_DASHBOARDS_URL": ""}
    code, output = _plan(emulator, str(tmp_path), env=shared)
    assert code == 1
    assert "Check RECONCILE_BASE_URL" in output


def test_bad_values_of_limit_variables_name_the_variable(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "a.yaml", "Pipe", "orders", pipe_spec(settings={}))
    for variable, value in (
        ("RECONCILE_MAX_RESPONSE_SIZE", "lots"),
        ("RECONCILE_MAX_ATTEMPTS", "x"),
        ("RECONCILE_ORGANIZATION_ID", "not-a-uuid"),
        ("RECONCILE_WORKSPACE", "../elsewhere"),
        ("RECONCILE_BASE_URL", "http://[::1"),
        ("RECONCILE_BASE_URL", "http://localhost:99999"),
    ):
        code, output = _plan(emulator, str(tmp_path), env={variable: value})
        assert code == 1, (variable, output)
        assert "internal error" not in output, (variable, output)
        assert variable in output, (variable, output)
    assert ORG_ID  # the manifests above pin the demo organization
