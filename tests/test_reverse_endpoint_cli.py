"""Reverse private endpoints through the real command line against an emulator on a port:
create and wait for Ready, adoption by description, the DNS mappings as the one update, a
create-time change refused without --replace and replaced with it, and prune of only the
endpoints this tool created."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import MSK, kafka_pipe
from tests.support.seed_ids import ANALYTICS, ENDPOINT_READY, ORG_ID

# The seeded endpoint of the analytics service, as a manifest states it.
BROKERS = {
    "organizationId": ORG_ID,
    "serviceId": ANALYTICS,
    "description": "orders brokers",
    "type": "VPC_ENDPOINT_SERVICE",
    "vpcEndpointServiceName": "vpce-svc-0a1b2c3d4e5f60718",
}


def _args(command: str, tmp_path: Path, *extra: str) -> list[str]:
    args = [command, str(tmp_path / "m"), "--state", str(tmp_path / "s.json"), *extra]
    return [*args, "--auto-approve"] if command == "apply" else args


def endpoints(emulator: Emulator) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = emulator.data()["reversePrivateEndpoints"]
    return found


def state_entry(tmp_path: Path, name: str) -> dict[str, Any]:
    document = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = document["resources"][f"ReversePrivateEndpoint/{name}"]
    return entry


def test_an_endpoint_is_created_waited_for_and_then_unchanged(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", MSK)
    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert planned.exit_code == 2, planned.output
    assert "POST" in planned.stdout and "pipesReversePrivateEndpoints" in planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    assert "create: Ready after" in applied.stdout
    made = [e for e in endpoints(emulator).values() if e["description"] == "orders cluster"]
    assert len(made) == 1 and made[0]["status"] == "Ready"
    entry = state_entry(tmp_path, "msk-orders")
    assert entry["id"] == made[0]["id"] and entry["createdByUs"] is True
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output


def test_an_endpoint_is_adopted_by_description_and_only_its_dns_mappings_are_patched(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {
        **BROKERS,
        "customPrivateDnsMappings": [{"privateDnsName": "broker-1.orders.internal"}],
    }
    write_manifest(tmp_path / "m" / "e.yaml", "ReversePrivateEndpoint", "orders-brokers", spec)
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    sent = [
        (w["method"], w["path"].rsplit("/", 1)[-1], w.get("body"))
        for w in writes(emulator.requests())
    ]
    assert sent == [
        ("PATCH", ENDPOINT_READY, {"customPrivateDnsMappings": spec["customPrivateDnsMappings"]})
    ]
    entry = state_entry(tmp_path, "orders-brokers")
    assert entry["id"] == ENDPOINT_READY and "createdByUs" not in entry
    final = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert final.exit_code == 0, final.output

    # An adopted endpoint is never pruned: its manifest removed, prune plans nothing for it.
    (tmp_path / "m" / "e.yaml").unlink()
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", MSK)
    pruned = run_cli(_args("plan", tmp_path, "--prune"), emulator.env())
    assert pruned.exit_code == 0, pruned.output
    assert ENDPOINT_READY not in pruned.stdout.replace(f"{ENDPOINT_READY}/", "")


def test_a_create_time_change_needs_replace_and_prune_deletes_what_this_tool_created(
    emulator: Emulator, tmp_path: Path
) -> None:
    manifest = tmp_path / "m" / "msk.yaml"
    write_manifest(manifest, "ReversePrivateEndpoint", "msk-orders", MSK)
    assert run_cli(_args("apply", tmp_path), emulator.env()).exit_code == 0
    first = state_entry(tmp_path, "msk-orders")["id"]

    write_manifest(
        manifest, "ReversePrivateEndpoint", "msk-orders", {**MSK, "mskAuthentication": "SASL_SCRAM"}
    )
    refused = run_cli(_args("plan", tmp_path), emulator.env())
    assert refused.exit_code == 1, refused.output
    assert "mskAuthentication: SASL_IAM → SASL_SCRAM" in refused.output
    assert "--replace" in refused.output

    replaced = run_cli(_args("apply", tmp_path, "--replace"), emulator.env())
    assert replaced.exit_code == 0, replaced.output
    second = state_entry(tmp_path, "msk-orders")["id"]
    assert second != first and first not in endpoints(emulator)
    assert endpoints(emulator)[second]["mskAuthentication"] == "SASL_SCRAM"

    manifest.unlink()
    write_manifest(
        tmp_path / "m" / "other.yaml",
        "ReversePrivateEndpoint",
        "other",
        {**MSK, "description": "other"},
    )
    pruned = run_cli(_args("apply", tmp_path, "--prune"), emulator.env())
    assert pruned.exit_code == 0, pruned.output
    assert second not in endpoints(emulator)
    assert ENDPOINT_READY in endpoints(emulator)
    document = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert "ReversePrivateEndpoint/msk-orders" not in document["resources"]


def test_a_type_without_its_fields_is_refused_before_anything_is_sent(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {k: v for k, v in MSK.items() if k != "mskClusterArn"}
    spec["gcpServiceAttachment"] = "projects/p/regions/r/serviceAttachments/a"
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", spec)
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code != 0
    assert "type MSK_MULTI_VPC needs spec.mskClusterArn" in planned.output
    assert "gcpServiceAttachment is not taken by type MSK_MULTI_VPC" in planned.output
    assert "msk.yaml:" in planned.output
    assert emulator.requests() == []


def _write_endpoint_and_pipe(tmp_path: Path) -> None:
    """Write the endpoint ``msk-orders`` (on the staging service) and a pipe naming it."""
    write_manifest(
        tmp_path / "m" / "msk.yaml",
        "ReversePrivateEndpoint",
        "msk-orders",
        {**MSK, "service": "staging"},
    )
    write_manifest(
        tmp_path / "m" / "pipe.yaml", "Pipe", "orders-private", kafka_pipe(["msk-orders"])
    )


def test_one_apply_creates_the_endpoint_waits_for_ready_then_the_pipe_that_names_it(
    emulator: Emulator, tmp_path: Path
) -> None:
    _write_endpoint_and_pipe(tmp_path)
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code == 0, planned.output
    assert "(known after create: ReversePrivateEndpoint/msk-orders)" in planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    endpoint_id = state_entry(tmp_path, "msk-orders")["id"]
    sent = [(w["method"], w["path"].rsplit("/", 1)[-1]) for w in writes(emulator.requests())]
    assert sent[0] == ("POST", "pipesReversePrivateEndpoints")
    assert sent[1] == ("POST", "pipes")
    (pipe,) = [p for p in emulator.data()["pipes"].values() if p["name"] == "orders-private"]
    assert pipe["source"]["kafka"]["reversePrivateEndpointIds"] == [endpoint_id]
    # The pipe's create came after the endpoint was read Ready.
    log = emulator.requests()
    post_pipe = next(
        i for i, r in enumerate(log) if r["method"] == "POST" and r["path"].endswith("/pipes")
    )
    assert any(
        r["method"] == "GET" and r["path"].endswith("pipesReversePrivateEndpoints")
        for r in log[1:post_pipe]
    )
    before = len(emulator.requests())
    final = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert final.exit_code == 0, final.output
    # The endpoint's status comes from its service's list: it is not read again for the pipe.
    read = [r["path"] for r in emulator.requests()[before:]]
    assert not [p for p in read if p.endswith(endpoint_id)], read


def test_an_endpoint_name_no_manifest_has_is_an_error_of_the_pipe(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", MSK)
    write_manifest(
        tmp_path / "m" / "pipe.yaml", "Pipe", "orders-private", kafka_pipe(["msk-order"])
    )
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code == 1, planned.output
    assert "no ReversePrivateEndpoint manifest is named 'msk-order'" in planned.output
    assert "msk-orders" in planned.output  # the suggestion


def test_names_and_ids_together_name_the_existing_endpoint_once(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = BROKERS
    write_manifest(tmp_path / "m" / "e.yaml", "ReversePrivateEndpoint", "orders-brokers", spec)
    pipe = kafka_pipe(["orders-brokers"], reversePrivateEndpointIds=[ENDPOINT_READY])
    write_manifest(tmp_path / "m" / "pipe.yaml", "Pipe", "orders-private", pipe)
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code == 0, planned.output
    assert f'reversePrivateEndpointIds: ["{ENDPOINT_READY}"]' in planned.stdout


def test_an_endpoint_a_pipe_manifest_names_is_never_replaced(
    emulator: Emulator, tmp_path: Path
) -> None:
    _write_endpoint_and_pipe(tmp_path)
    assert run_cli(_args("apply", tmp_path), emulator.env()).exit_code == 0
    changed = {**MSK, "service": "staging", "mskAuthentication": "SASL_SCRAM"}
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", changed)
    before = len(writes(emulator.requests()))
    refused = run_cli(_args("apply", tmp_path, "--replace"), emulator.env())
    assert refused.exit_code == 1, refused.output
    assert "Pipe/orders-private use(s) it" in refused.output
    assert len(writes(emulator.requests())) == before


def test_a_saved_plan_creates_the_endpoint_once(emulator: Emulator, tmp_path: Path) -> None:
    write_manifest(tmp_path / "m" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", MSK)
    saved = tmp_path / "e.plan.json"
    assert run_cli(_args("plan", tmp_path, "--out", str(saved)), emulator.env()).exit_code == 0
    args = ["apply", "--plan", str(saved), "--state", str(tmp_path / "s.json"), "--auto-approve"]
    applied = run_cli(args, emulator.env())
    assert applied.exit_code == 0, applied.output
    again = run_cli(args, emulator.env())
    assert "already applied" in again.output, again.output
    made = [e for e in endpoints(emulator).values() if e["description"] == MSK["description"]]
    assert len(made) == 1
