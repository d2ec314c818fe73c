"""Pipe lifecycle against the emulator: a pipe without pipeId is created, adopted by name or
bound by state; create-time differences need --replace; --prune deletes only pipes this tool
created; a spec-only server refuses what it cannot do before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.support.cli import UNPACED, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec, pipes_named
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID


def _run(command: str, root: Path, state: Path, env: dict[str, str], *extra: str) -> Any:
    args = [command, str(root), "--state", str(state), *UNPACED, *extra]
    return run_cli([*args, "--auto-approve"] if command == "apply" else args, env)


def test_a_pipe_without_pipe_id_is_created_once_and_then_bound_by_state(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    planned = _run("plan", root, state, emulator.env())
    assert planned.exit_code == 0, planned.output
    assert "+ pipe returns (create)" in planned.stdout
    assert "source.kafka.credentials: (sensitive value)" in planned.stdout
    assert "kafka-pass-SECRETVALUE" not in planned.output
    applied = _run("apply", root, state, emulator.env())
    assert applied.exit_code == 0, applied.output
    (pipe,) = pipes_named(emulator, "returns")
    assert pipe["source"]["kafka"]["topics"] == "returns"
    recorded = json.loads(state.read_text())["resources"]["Pipe/returns"]
    assert recorded["id"] == pipe["id"] and recorded["createdByUs"] is True
    assert "uncertain" not in recorded and "kafka-pass" not in state.read_text()
    again = _run("plan", root, state, emulator.env(), "--detailed-exitcode")
    assert again.exit_code == 0, again.output  # apply(plan) then plan: no changes
    # Renaming the pipe in the manifest is now an update of the same pipe, never a create.
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec(name="refunds"))
    renamed = _run("apply", root, state, emulator.env())
    assert renamed.exit_code == 0, renamed.output
    assert [p["id"] for p in pipes_named(emulator, "refunds")] == [pipe["id"]]
    assert pipes_named(emulator, "returns") == []


def test_a_pipe_is_adopted_by_name_recorded_and_never_pruned(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    spec = {"organizationId": ORG_ID, "serviceId": ANALYTICS, "name": "orders"}
    write_manifest(root / "orders.yaml", "Pipe", "orders", spec)
    applied = _run("apply", root, state, emulator.env())
    assert applied.exit_code == 0, applied.output
    assert writes(emulator.requests()) == []  # adopted: nothing to send
    recorded = json.loads(state.read_text())["resources"]["Pipe/orders"]
    assert recorded["id"] == KAFKA_PIPE and "createdByUs" not in recorded
    write_manifest(root / "orders.yaml", "Organization", "acme", {"organizationId": ORG_ID})
    pruned = _run("plan", root, state, emulator.env(), "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert "DELETE" not in pruned.stdout  # adopted, not created: never pruned


def test_two_live_pipes_with_the_manifests_name_are_an_error_naming_both(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "a.yaml", "Pipe", "a", kafka_spec(name="twin"))
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    (first,) = pipes_named(emulator, "twin")
    body = {k: first[k] for k in ("name", "destination", "fieldMappings")}
    kafka = {k: first["source"]["kafka"][k] for k in ("format", "brokers", "topics")}
    body["source"] = {"kafka": {**kafka, "credentials": {"username": "u", "password": "p"}}}
    with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as c:
        made = c.post(f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes", json=body)
        assert made.status_code == 200, made.text
    ids = [p["id"] for p in pipes_named(emulator, "twin")]
    assert len(ids) == 2
    before = len(writes(emulator.requests()))
    third = _run("apply", root, tmp_path / "third.json", emulator.env())
    assert third.exit_code == 1
    assert all(i in third.output for i in ids) and "2 live pipes are named 'twin'" in third.output
    assert len(writes(emulator.requests())) == before


def test_a_topic_change_is_refused_then_replace_recreates_the_pipe(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    (old,) = pipes_named(emulator, "returns")
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec(topics="returns-v2"))
    before = len(writes(emulator.requests()))
    refused = _run("apply", root, state, emulator.env())
    assert refused.exit_code == 1
    assert "must be replaced (source.kafka.topics: returns → returns-v2)" in refused.output
    assert "--replace" in refused.output
    assert len(writes(emulator.requests())) == before
    replaced = _run("apply", root, state, emulator.env(), "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert "ingestion stops and restarts" in replaced.stdout
    (new,) = pipes_named(emulator, "returns")
    assert new["id"] != old["id"] and new["source"]["kafka"]["topics"] == "returns-v2"
    recorded = json.loads(state.read_text())["resources"]["Pipe/returns"]
    assert recorded["id"] == new["id"] and recorded["createdByUs"] is True
    assert _run("plan", root, state, emulator.env(), "--detailed-exitcode").exit_code == 0


def test_prune_deletes_a_created_pipe_whose_manifest_is_gone(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    (root / "returns.yaml").unlink()
    write_manifest(root / "org.yaml", "Organization", "acme", {"organizationId": ORG_ID})
    kept = _run("apply", root, state, emulator.env())
    assert kept.exit_code == 0 and len(pipes_named(emulator, "returns")) == 1
    assert "manifests are gone (Pipe/returns)" in kept.stdout and "--prune" in kept.stdout
    planned = _run("plan", root, state, emulator.env(), "--prune")
    assert "- pipe returns" in planned.stdout and "DELETE" in planned.stdout
    pruned = _run("apply", root, state, emulator.env(), "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert pipes_named(emulator, "returns") == []
    assert "Pipe/returns" not in json.loads(state.read_text())["resources"]
    again = _run("plan", root, state, emulator.env(), "--prune", "--detailed-exitcode")
    assert again.exit_code == 0, again.output


def test_a_spec_only_server_refuses_a_pipe_without_pipe_id_before_sending(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root, state = tmp_path / "m", tmp_path / "s.json"
    path = write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    result = _run("apply", root, state, emulator.env())
    assert result.exit_code == 1
    assert f"{path}:" in result.output and "cannot list or create pipes" in result.output
    assert writes(emulator.requests()) == []


def test_a_pipe_without_pipe_id_must_state_its_name(tmp_path: Path) -> None:
    spec = kafka_spec()
    del spec["name"]
    path = write_manifest(tmp_path / "p.yaml", "Pipe", "p", spec)
    result = run_cli(["validate", str(path)], {})
    assert result.exit_code == 1
    assert f"{path}:" in result.output
    assert "spec.name is required when spec.pipeId" in result.output


def test_two_manifests_adopting_the_name_a_pinned_manifest_holds_are_both_errors(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    pinned = {"organizationId": ORG_ID, "serviceId": ANALYTICS, "pipeId": KAFKA_PIPE}
    write_manifest(root / "a.yaml", "Pipe", "a", pinned)
    by_name = {"organizationId": ORG_ID, "serviceId": ANALYTICS, "name": "orders"}
    write_manifest(root / "b.yaml", "Pipe", "b", by_name)
    result = _run("apply", root, state, emulator.env())
    assert result.exit_code == 1
    assert f"pipe {KAFKA_PIPE} is bound to two manifests" in result.output
    assert writes(emulator.requests()) == []


def test_a_saved_plan_with_a_create_applies_once_and_is_stale_once_the_pipe_exists(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state, elsewhere = tmp_path / "m", tmp_path / "s.json", tmp_path / "elsewhere.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    mine, theirs = tmp_path / "mine.plan", tmp_path / "theirs.plan"
    for saved, where in ((mine, state), (theirs, elsewhere)):
        made = _run("plan", root, where, emulator.env(), "--out", str(saved))
        assert made.exit_code == 0, made.output
    text = mine.read_text()
    assert '"operation": "create"' in text and "kafka-pass-SECRETVALUE" not in text

    def apply_saved(saved: Path, where: Path) -> Any:
        args = ["apply", "--plan", str(saved), "--auto-approve", "--state", str(where), *UNPACED]
        return run_cli(args, emulator.env())

    applied = apply_saved(mine, state)
    assert applied.exit_code == 0, applied.output
    (pipe,) = pipes_named(emulator, "returns")
    assert "secrets" in json.loads(state.read_text())["resources"]["Pipe/returns"]
    again = apply_saved(mine, state)
    assert again.exit_code == 0 and "already applied" in again.output
    stale = apply_saved(theirs, elsewhere)  # made before the pipe existed, by another state
    assert stale.exit_code == 1 and "a pipe named 'returns' now exists" in stale.output
    assert [p["id"] for p in pipes_named(emulator, "returns")] == [pipe["id"]]


def test_plans_with_a_create_a_replace_and_a_prune_match_the_published_plan_schema(
    emulator: Emulator, tmp_path: Path
) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((Path(__file__).parent.parent / "schemas" / "plan.schema.json").read_text())
    validator = Draft202012Validator(schema)
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    documents = [_run("plan", root, state, emulator.env(), "-o", "json").json()]
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec(topics="v2"))
    documents.append(_run("plan", root, state, emulator.env(), "-o", "json", "--replace").json())
    (root / "returns.yaml").unlink()
    write_manifest(root / "org.yaml", "Organization", "acme", {"organizationId": ORG_ID})
    documents.append(_run("plan", root, state, emulator.env(), "-o", "json", "--prune").json())
    operations = [[a["operation"] for a in d["actions"] if a["kind"] == "Pipe"] for d in documents]
    assert operations == [["create"], ["replace"], ["delete"]]
    assert documents[0]["actions"][0]["bound"] == "new"
    for document in documents:
        assert [e.message for e in validator.iter_errors(document)] == []


def test_two_manifests_that_would_create_one_pipe_name_in_one_service_are_both_errors(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "a.yaml", "Pipe", "a", kafka_spec(name="dup"))
    by_id = {k: v for k, v in kafka_spec(name="dup").items() if k != "service"}
    write_manifest(root / "b.yaml", "Pipe", "b", {**by_id, "serviceId": ANALYTICS})
    result = _run("apply", root, state, emulator.env())
    assert result.exit_code == 1
    assert "would both create a pipe named 'dup'" in result.output
    assert "Pipe/a" in result.output and "Pipe/b" in result.output
    assert writes(emulator.requests()) == []
