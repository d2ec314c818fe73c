"""Schema registry credentials of a Kafka pipe: accepted by the manifest schema as secret
references only, shown as ``(sensitive value)`` in every plan format and the plan file, sent in
the create body, fingerprinted in state, and never compared afterwards (a create-time secret)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.load.schema import json_validator
from reconciler.model.fields import is_create_time_secret, is_secret_path
from tests.support.cli import UNPACED, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec, pipes_named

REGISTRY_ENV = {
    "REGISTRY_USER": "reg-user-SECRETVALUE-R1",
    "REGISTRY_PASS": "reg-pass-SECRETVALUE-R2",
}
CREDENTIALS = {"username": {"fromEnv": "REGISTRY_USER"}, "password": {"fromEnv": "REGISTRY_PASS"}}


def registry_spec(credentials: Any = None) -> dict[str, Any]:
    """A Kafka pipe reading AvroConfluent through a registry that needs PLAIN credentials."""
    spec = kafka_spec()
    spec["source"]["kafka"]["format"] = "AvroConfluent"
    spec["source"]["kafka"]["schemaRegistry"] = {
        "url": "https://registry.example.com",
        "authentication": "PLAIN",
        "credentials": CREDENTIALS if credentials is None else credentials,
    }
    return spec


def _manifest(spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "returns"}
    return {"apiVersion": "reconcile/v1", "kind": "Pipe", "metadata": meta, "spec": spec}


def _secret_free(text: str) -> bool:
    return "SECRETVALUE" not in text


def _run(command: str, root: Path, state: Path, env: dict[str, str], *extra: str) -> Any:
    args = [command, str(root), "--state", str(state), *UNPACED, *extra]
    args = [*args, "--auto-approve"] if command == "apply" else args
    return run_cli(args, {**REGISTRY_ENV, **env})


@pytest.mark.parametrize(
    ("path", "secret", "create_time"),
    [
        (("source", "kafka", "schemaRegistry", "credentials"), True, True),
        (("source", "kafka", "schemaRegistry", "credentials", "password"), True, True),
        (("source", "kafka", "schemaRegistry", "url"), False, False),
        (("source", "kafka", "credentials"), True, False),
        (("source", "objectStorage", "schemaRegistry", "credentials"), False, False),
    ],
)
def test_registry_credentials_are_the_one_create_time_secret_of_the_field_list(
    path: tuple[str, ...], secret: bool, create_time: bool
) -> None:
    assert is_secret_path(path) is secret
    assert is_create_time_secret(path) is create_time


def test_the_schema_takes_registry_credentials_as_references_and_refuses_a_literal() -> None:
    check = json_validator("Pipe")
    assert check.is_valid(_manifest(registry_spec()))
    literal = {"username": "reg-user", "password": "reg-pass-SECRETVALUE"}
    assert not check.is_valid(_manifest(registry_spec(literal)))


def test_a_new_pipe_plan_shows_registry_credentials_as_sensitive_in_every_format(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state, saved = tmp_path / "m", tmp_path / "s.json", tmp_path / "p.plan"
    write_manifest(root / "returns.yaml", "Pipe", "returns", registry_spec())
    text = _run("plan", root, state, emulator.env(), "--out", str(saved))
    assert text.exit_code == 0, text.output
    assert "source.kafka.schemaRegistry.credentials: (sensitive value)" in text.stdout
    assert "schemaRegistry.url" in text.stdout
    assert _secret_free(text.output) and _secret_free(saved.read_text())
    for output in ("json", "markdown"):
        shown = _run("plan", root, state, emulator.env(), "-o", output)
        assert shown.exit_code == 0, shown.output
        assert "source.kafka.schemaRegistry.credentials" in shown.stdout
        assert "(sensitive" in shown.stdout and _secret_free(shown.output)
    json.loads(_run("plan", root, state, emulator.env(), "-o", "json").stdout)


def test_apply_sends_registry_credentials_on_create_only_and_the_next_plan_has_no_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", registry_spec())
    applied = _run("apply", root, state, emulator.env())
    assert applied.exit_code == 0, applied.output
    assert _secret_free(applied.output)
    (pipe,) = pipes_named(emulator, "returns")
    assert pipe["source"]["kafka"]["schemaRegistry"]["url"] == "https://registry.example.com"
    (create,) = [r for r in writes(emulator.requests()) if r["method"] == "POST"]
    sent = create["body"]["source"]["kafka"]["schemaRegistry"]["credentials"]
    assert sent == {
        "username": REGISTRY_ENV["REGISTRY_USER"],
        "password": REGISTRY_ENV["REGISTRY_PASS"],
    }
    recorded = json.loads(state.read_text())["resources"]["Pipe/returns"]
    assert "source.kafka.schemaRegistry.credentials" in recorded["secrets"]
    assert _secret_free(state.read_text())
    again = _run("plan", root, state, emulator.env(), "--detailed-exitcode")
    assert again.exit_code == 0, again.output
    # A new registry password differs from the fingerprint recorded at create: only --replace
    # can send it, and nothing shows it.
    before = len(writes(emulator.requests()))
    other = {**emulator.env(), "REGISTRY_PASS": "other-SECRETVALUE"}
    refused = _run("apply", root, state, other)
    assert refused.exit_code == 1, refused.output
    assert "must be replaced" in refused.output and "--replace" in refused.output
    assert "schemaRegistry.credentials: (sensitive value changed)" in refused.output
    assert _secret_free(refused.output) and len(writes(emulator.requests())) == before
    replaced = _run("apply", root, state, other, "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert _secret_free(replaced.output) and _secret_free(state.read_text())
    (new,) = pipes_named(emulator, "returns")
    assert new["id"] != pipe["id"]
    assert _run("plan", root, state, other, "--detailed-exitcode").exit_code == 0


def test_an_adopted_pipe_compares_registry_credentials_to_nothing(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", registry_spec())
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    fresh = tmp_path / "fresh.json"  # another workspace adopts the pipe by name
    adopted = _run("apply", root, fresh, emulator.env())
    assert adopted.exit_code == 0, adopted.output
    assert "must be replaced" not in adopted.output
    again = _run("plan", root, fresh, emulator.env(), "--detailed-exitcode")
    assert again.exit_code == 0, again.output


def test_a_literal_registry_password_is_refused_at_its_line_without_echoing_it(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    literal = {"username": {"fromEnv": "REGISTRY_USER"}, "password": "reg-pass-SECRETVALUE-lit"}
    write_manifest(root / "returns.yaml", "Pipe", "returns", registry_spec(literal))
    refused = _run("plan", root, state, emulator.env())
    assert refused.exit_code == 1, refused.output
    assert "returns.yaml:" in refused.output and "schemaRegistry.credentials" in refused.output
    assert _secret_free(refused.output) and writes(emulator.requests()) == []
