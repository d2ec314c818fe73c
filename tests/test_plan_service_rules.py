"""Planning against the real service's rules: fieldMappings violations become plan errors
naming the manifest line; the example manifests plan and apply cleanly against the emulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.client.live import Observed
from reconciler.model.resources import Resource
from reconciler.model.secrets import Secret, fingerprint
from reconciler.plan.actions import Action, Op
from reconciler.plan.diff import ChangeKind, SecretCheck
from reconciler.plan.planners import plan_pipe
from tests.support.cli import SECRET_ENV, pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES
from tests.support.plan_inputs import (
    IDS,
    KAFKA_LIVE,
    KEY,
    NO_SECRETS,
    PIPE_PATH,
    LineLocator,
    plan_for,
)
from tests.support.seed_ids import (
    KAFKA_CONNECTION_STRING_PIPE,
    KAFKA_IAM_USER_PIPE,
    KAFKA_MUTUAL_TLS_PIPE,
    KAFKA_PIPE,
)

REPO = Path(__file__).resolve().parent.parent
LIVE = {
    **KAFKA_LIVE,
    "destination": {"columns": [{"name": "id"}, {"name": "amount"}]},
    "fieldMappings": [
        {"sourceField": "id", "destinationField": "id"},
        {"sourceField": "amount", "destinationField": "amount"},
    ],
}


def m(source: str, destination: str) -> dict[str, str]:
    return {"sourceField": source, "destinationField": destination}


def located_plan(spec: dict[str, Any], lines: dict[tuple[Any, ...], int]) -> Action:
    locator = LineLocator({("metadata", "name"): 4, ("spec",): 6, **lines})
    resource = Resource("Pipe", "orders", {**IDS, **spec}, "m.yaml", locator=locator)
    observed = Observed(live=LIVE, error=None, path=PIPE_PATH, endpoint_status={})
    return plan_pipe(resource, resource.spec, observed, NO_SECRETS, ids=IDS)


def test_mapping_to_a_column_the_destination_lacks_is_a_plan_error_naming_its_line() -> None:
    spec = {"fieldMappings": [m("id", "id"), m("total", "order_total")]}
    action = located_plan(spec, {("spec", "fieldMappings", 1, "destinationField"): 14})
    assert action.operation is Op.ERROR and not action.requests
    message = next(e for e in action.errors if "order_total" in e)
    assert "m.yaml:14" in message and "order_total" in message
    assert "id, amount" in message


def test_leaving_a_destination_column_unmapped_is_a_plan_error() -> None:
    action = located_plan({"fieldMappings": [m("id", "id")]}, {("spec", "fieldMappings"): 12})
    assert action.operation is Op.ERROR
    assert any("amount" in e and "not mapped" in e and "m.yaml:12" in e for e in action.errors)


def test_new_columns_are_checked_against_the_live_mappings() -> None:
    spec = {"destination": {"columns": [{"name": "id"}, {"name": "amount"}, {"name": "region"}]}}
    action = located_plan(spec, {("spec", "destination", "columns"): 9})
    assert action.operation is Op.ERROR
    assert any("region" in e and "not mapped" in e for e in action.errors)


def test_complete_mappings_plan_one_patch() -> None:
    spec = {"fieldMappings": [m("id", "id"), m("total", "amount")]}
    action = plan_for(spec, LIVE)
    assert action.operation is Op.UPDATE and not action.errors
    assert [r.body for r in action.requests] == [{"fieldMappings": spec["fieldMappings"]}]


def test_unchanged_mappings_are_not_checked_again() -> None:
    broken_live = {**LIVE, "fieldMappings": [m("id", "id")]}
    assert plan_for({"name": "orders"}, broken_live).operation is Op.NOOP


def test_example_manifests_plan_without_errors_and_apply_end_to_end(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = ["--state", str(tmp_path / "state.json"), "--rate", "none"]
    plan = run_cli(["plan", str(EXAMPLES), "-o", "json", *state], emulator.env())
    assert plan.exit_code == 0, plan.output
    assert not [a for a in plan.json()["actions"] if a.get("errors")]
    applied = run_cli(["apply", str(EXAMPLES), "--auto-approve", *state], emulator.env())
    assert applied.exit_code == 0, applied.output
    again = run_cli(["plan", str(EXAMPLES), "--detailed-exitcode", *state], emulator.env())
    assert again.exit_code == 0, again.output


# Kafka authentication and credentials travel together.

USER_PASSWORD = {"username": Secret("u"), "password": Secret("p")}
IAM_USER_KEY = {"accessKeyId": Secret("AKIA"), "secretKey": Secret("k")}
PLAIN_LIVE = {**LIVE, "source": {"kafka": {"authentication": "PLAIN", "topics": "orders"}}}


def recorded(credentials: dict[str, Secret]) -> SecretCheck:
    return SecretCheck(KEY, {"source.kafka.credentials": fingerprint(KEY, credentials)})


def test_switching_to_iam_user_sends_authentication_and_credentials_in_one_patch() -> None:
    spec = {"source": {"kafka": {"authentication": "IAM_USER", "credentials": IAM_USER_KEY}}}
    action = plan_for(spec, PLAIN_LIVE, secrets=recorded(USER_PASSWORD))
    assert action.operation is Op.UPDATE and len(action.requests) == 1
    body = action.requests[0].body
    assert body is not None and set(body["source"]["kafka"]) == {"authentication", "credentials"}


def test_a_new_method_resends_unchanged_credentials() -> None:
    spec = {"source": {"kafka": {"authentication": "SCRAM-SHA-512", "credentials": USER_PASSWORD}}}
    action = plan_for(spec, PLAIN_LIVE, secrets=recorded(USER_PASSWORD))
    (request,) = action.requests
    assert request.body is not None
    assert set(request.body["source"]["kafka"]) == {"authentication", "credentials"}
    assert {c.kind for c in action.changes} == {ChangeKind.SET, ChangeKind.SENSITIVE}


def test_credentials_of_the_wrong_shape_are_a_plan_error_naming_their_line() -> None:
    spec = {"source": {"kafka": {"authentication": "IAM_USER", "credentials": USER_PASSWORD}}}
    action = located_plan(spec, {("spec", "source", "kafka", "credentials"): 17})
    assert action.operation is Op.ERROR
    assert any("m.yaml:17" in e and "{accessKeyId, secretKey}" in e for e in action.errors)


def test_switching_to_a_method_without_its_credentials_is_a_plan_error() -> None:
    spec = {"source": {"kafka": {"authentication": "MUTUAL_TLS"}}}
    action = located_plan(spec, {("spec", "source", "kafka", "authentication"): 15})
    assert action.operation is Op.ERROR
    assert any("m.yaml:15" in e and "{certificate, privateKey}" in e for e in action.errors)


def test_iam_role_needs_no_credentials() -> None:
    spec = {"source": {"kafka": {"authentication": "IAM_ROLE", "iamRole": "arn:role"}}}
    action = plan_for(spec, PLAIN_LIVE)
    assert action.operation is Op.UPDATE and not action.errors


CREDENTIAL_EXAMPLES = [
    ("orders.yaml", KAFKA_PIPE, "PLAIN", {"username": "KAFKA_USER", "password": "KAFKA_PASSWORD"}),
    (
        "payments.yaml",
        KAFKA_IAM_USER_PIPE,
        "IAM_USER",
        {"accessKeyId": "PAYMENTS_KAFKA_ACCESS_KEY_ID", "secretKey": "PAYMENTS_KAFKA_SECRET_KEY"},
    ),
    (
        "telemetry.yaml",
        KAFKA_CONNECTION_STRING_PIPE,
        "PLAIN",
        {"connectionString": "TELEMETRY_KAFKA_CONNECTION_STRING"},
    ),
    (
        "audit-log.yaml",
        KAFKA_MUTUAL_TLS_PIPE,
        "MUTUAL_TLS",
        {"certificate": "AUDIT_KAFKA_CERTIFICATE", "privateKey": "AUDIT_KAFKA_PRIVATE_KEY"},
    ),
]


@pytest.mark.parametrize(
    ("example", "pipe_id", "method", "env_names"),
    CREDENTIAL_EXAMPLES,
    ids=[e[0] for e in CREDENTIAL_EXAMPLES],
)
def test_each_credential_shape_example_applies_end_to_end(
    emulator: Emulator,
    tmp_path: Path,
    example: str,
    pipe_id: str,
    method: str,
    env_names: dict[str, str],
) -> None:
    path = str(EXAMPLES / "pipes" / example)
    args = [path, "--state", str(tmp_path / "s.json"), "--rate", "none"]
    applied = run_cli(["apply", *args, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    assert "(sensitive value changed)" in applied.stdout
    assert not any(SECRET_ENV[name] in applied.output for name in env_names.values())
    stored = emulator.data()["pipes"][pipe_id]["source"]["kafka"]
    assert stored["authentication"] == method
    assert stored["credentials"] == {k: SECRET_ENV[v] for k, v in env_names.items()}
    again = run_cli(["plan", *args, "--detailed-exitcode"], emulator.env())
    assert again.exit_code == 0, again.output
    (body,) = [w["body"] for w in writes(emulator.requests())]
    assert "credentials" in body["source"]["kafka"]


def test_validate_holds_stated_columns_and_mappings_to_the_rule(tmp_path: Path) -> None:
    spec = pipe_spec(
        destination={
            "columns": [{"name": "id", "type": "String"}, {"name": "amount", "type": "UInt64"}]
        },
        fieldMappings=[m("id", "id"), m("total", "order_total")],
    )
    write_manifest(tmp_path / "p.yaml", "Pipe", "orders", spec)
    result = run_cli(["validate", str(tmp_path / "p.yaml")], {})
    assert result.exit_code == 1
    assert "spec.fieldMappings[1].destinationField: maps to 'order_total'" in result.output
    assert "spec.fieldMappings: leave destination column(s) amount not mapped" in result.output
