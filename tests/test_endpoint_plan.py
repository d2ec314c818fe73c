"""Planning a reverse private endpoint (pure): which live endpoint a manifest is bound to, and
the create, update, replacement, refusal or prune that follows."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.client.livestate import ServiceEndpoints
from reconciler.model.errors import Location
from reconciler.model.identity import Bound, Record
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, Purpose, Request
from reconciler.plan.endpointrefs import fill_created, known_after_create, refer
from reconciler.plan.endpoints import bind_endpoint, plan_endpoint, plan_endpoint_prune

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
LIVE_ID = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51"
OTHER_ID = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e59"
BASE = f"/v1/organizations/{ORG}/services/{SERVICE}/pipesReversePrivateEndpoints"
SPEC: dict[str, Any] = {
    "organizationId": ORG,
    "serviceId": SERVICE,
    "description": "orders cluster",
    "type": "MSK_MULTI_VPC",
    "mskClusterArn": "arn:aws:kafka:us-east-1:1:cluster/orders/1",
    "mskAuthentication": "SASL_IAM",
}
LIVE: dict[str, Any] = {
    **{k: v for k, v in SPEC.items() if k != "organizationId"},
    "id": LIVE_ID,
    "customPrivateDnsMappings": [],
    "status": "Ready",
}


def _plan(
    spec: dict[str, Any],
    listed: list[dict[str, Any]],
    *,
    record: Record | None = None,
    replace: bool = False,
    used_by: tuple[str, ...] = (),
) -> Any:
    resource = Resource("ReversePrivateEndpoint", "msk-orders", spec, "e.yaml")
    found = ServiceEndpoints(ORG, SERVICE, tuple(listed))
    held = {record.id: "msk-orders"} if record is not None and record.id else {}
    binding = bind_endpoint(resource, found, record, held)
    return plan_endpoint(resource, found, binding, replace=replace, used_by=used_by)


def test_nothing_listed_is_one_post_of_every_stated_field() -> None:
    action = _plan(SPEC, [])
    assert action.operation is Op.CREATE and action.bound == Bound.NEW
    (post,) = action.requests
    assert (post.method, post.path, post.purpose) == ("POST", BASE, Purpose.CREATE)
    assert post.body == {k: v for k, v in SPEC.items() if k not in ("organizationId", "serviceId")}


def test_the_one_endpoint_with_the_description_is_adopted_and_equal_is_noop() -> None:
    action = _plan(SPEC, [LIVE])
    assert (action.operation, action.bound, action.target["reversePrivateEndpointId"]) == (
        Op.NOOP,
        Bound.ADOPTED,
        LIVE_ID,
    )


def test_two_endpoints_with_the_description_are_an_error_naming_both() -> None:
    action = _plan(SPEC, [LIVE, {**LIVE, "id": OTHER_ID}])
    assert action.operation is Op.ERROR
    assert LIVE_ID in action.errors[0] and OTHER_ID in action.errors[0]


def test_the_state_record_wins_over_the_description() -> None:
    renamed = {**LIVE, "id": OTHER_ID, "description": "renamed elsewhere"}
    action = _plan(SPEC, [LIVE, renamed], record=Record(OTHER_ID, created_by_us=True))
    assert action.bound == Bound.RECORDED
    assert action.target["reversePrivateEndpointId"] == OTHER_ID
    assert action.operation is Op.ERROR  # its description differs: create-time
    assert "description: renamed elsewhere → orders cluster" in action.errors[0]


def test_dns_mappings_are_the_one_update() -> None:
    mappings = [{"privateDnsName": "b-1.orders.internal"}]
    action = _plan({**SPEC, "customPrivateDnsMappings": mappings}, [LIVE])
    (patch,) = action.requests
    assert action.operation is Op.UPDATE
    assert (patch.method, patch.path, patch.body) == (
        "PATCH",
        f"{BASE}/{LIVE_ID}",
        {"customPrivateDnsMappings": mappings},
    )


@pytest.mark.parametrize(
    ("replace", "used_by", "expected"),
    [
        (False, (), "pass --replace"),
        (True, ("Pipe/orders",), "Pipe/orders use(s) it"),
    ],
)
def test_a_create_time_difference_is_refused_without_replace_or_while_a_pipe_uses_it(
    replace: bool, used_by: tuple[str, ...], expected: str
) -> None:
    action = _plan(
        {**SPEC, "mskAuthentication": "SASL_SCRAM"}, [LIVE], replace=replace, used_by=used_by
    )
    assert action.operation is Op.ERROR and not action.has_changes
    assert "mskAuthentication: SASL_IAM → SASL_SCRAM" in action.errors[0]
    assert expected in action.errors[0]


def test_replace_deletes_then_creates() -> None:
    action = _plan({**SPEC, "mskAuthentication": "SASL_SCRAM"}, [LIVE], replace=True)
    assert action.operation is Op.REPLACE
    assert [(r.method, r.purpose) for r in action.requests] == [
        ("DELETE", Purpose.DELETE_FOR_REPLACE),
        ("POST", Purpose.CREATE),
    ]
    assert action.requests[0].path == f"{BASE}/{LIVE_ID}"


def test_a_status_other_than_ready_is_said() -> None:
    action = _plan(SPEC, [{**LIVE, "status": "Failed"}])
    assert action.operation is Op.NOOP
    assert any("is Failed" in w for w in action.warnings)


def test_prune_deletes_the_recorded_endpoint() -> None:
    record = Record(
        LIVE_ID, created_by_us=True, scope={"organizationId": ORG, "serviceId": SERVICE}
    )
    action = plan_endpoint_prune("msk-orders", record, LIVE, Location("s.json"))
    assert action.operation is Op.DELETE
    assert [(r.method, r.path) for r in action.requests] == [("DELETE", f"{BASE}/{LIVE_ID}")]


def _pipe(**kafka: Any) -> Resource:
    spec = {"organizationId": ORG, "serviceId": SERVICE, "name": "p", "source": {"kafka": kafka}}
    return Resource("Pipe", "p", spec, "p.yaml")


def test_a_pipe_names_endpoints_by_manifest_and_gets_their_ids_after_its_own() -> None:
    bound = _plan(SPEC, [LIVE])
    new = _plan(SPEC, [])
    stated = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e50"
    pipes, failed = refer(
        [_pipe(reversePrivateEndpoints=["a", "b"], reversePrivateEndpointIds=[stated])],
        {"a": bound, "b": new},
    )
    assert failed == {}
    kafka = pipes[0].spec["source"]["kafka"]
    assert "reversePrivateEndpoints" not in kafka
    assert kafka["reversePrivateEndpointIds"] == [
        stated,
        LIVE_ID,
        known_after_create("ReversePrivateEndpoint/msk-orders"),
    ]


def test_a_pipe_whose_endpoint_was_not_created_is_not_sent() -> None:
    body = {"source": {"kafka": {"reversePrivateEndpointIds": [known_after_create("E/x")]}}}
    action = Action(
        "Pipe", "p", Op.CREATE, Location("p.yaml"), requests=(Request("POST", "/p", body),)
    )
    assert "E/x" in str(fill_created(action, {}))
    filled = fill_created(action, {"E/x": LIVE_ID})
    assert not isinstance(filled, str)
    assert filled.requests[0].body == {
        "source": {"kafka": {"reversePrivateEndpointIds": [LIVE_ID]}}
    }
