"""Planning is a pure function of (desired, snapshot, state): ``plan_snapshot`` binds every
manifest to its live object and plans it from a ``LiveSnapshot`` built here by hand — no
server, no client, no request — and decodes one service's pipe list at a time."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import reconciler.plan
from reconciler.client.livestate import (
    Capabilities,
    LiveSnapshot,
    PipeList,
    ServiceCdc,
    ServiceEndpoints,
)
from reconciler.model.apierrors import ApiError
from reconciler.model.identity import Bound
from reconciler.model.json import JsonObject
from reconciler.model.resources import Resource
from reconciler.plan.actions import Op
from reconciler.plan.compute import PlanOptions, plan_snapshot, wanted
from reconciler.state.document import State, new_state

ORG, SVC = "org-1", "svc-1"
LIVE_PIPE: dict[str, Any] = {
    "id": "pipe-1",
    "name": "orders",
    "state": "Running",
    "source": {
        "kafka": {
            "brokers": "b-1:9092",
            "topics": "orders",
            "format": "JSONEachRow",
            "authentication": "IAM_ROLE",
            "iamRole": "arn:role",
        }
    },
    "destination": {"database": "default", "table": "orders", "columns": [{"name": "id"}]},
    "fieldMappings": [{"sourceField": "id", "destinationField": "id"}],
    "settings": {"engine_max_threads": 4},
}
DESIRED = {k: v for k, v in LIVE_PIPE.items() if k not in ("id", "state")}


def pipe(manifest: str = "orders", **spec: Any) -> Resource:
    where = {"organizationId": ORG, "serviceId": SVC}
    return Resource("Pipe", manifest, {**where, **DESIRED, **spec}, f"pipes/{manifest}.yaml")


def listed(*pipes: JsonObject) -> PipeList:
    return PipeList(decode=lambda: [dict(p) for p in pipes])


def malformed() -> list[JsonObject]:
    raise ApiError(status=200, message=f"pipes of service {SVC}: the answer is not a list of pipes")


def lists(found: PipeList) -> LiveSnapshot:
    return LiveSnapshot(pipe_lists={(ORG, SVC): found}, capabilities=Capabilities(pipes_list=True))


def recorded(**entries: dict[str, Any]) -> State:
    state = new_state("memory")
    for key, entry in entries.items():
        state.record(key.replace("__", "/"), **entry)
    return state


@dataclass(frozen=True)
class Case:
    desired: tuple[Resource, ...]
    snapshot: LiveSnapshot
    # By action key: the operation, and how it was bound or a piece of its error.
    expected: Mapping[str, tuple[Op, Bound | str | None]]
    state: Callable[[], State] = lambda: new_state("memory")
    options: PlanOptions = field(default_factory=PlanOptions)


TARGET = {"target": {"organizationId": ORG, "serviceId": SVC}}
ENDPOINT_SPEC = {
    "organizationId": ORG,
    "serviceId": SVC,
    "description": "orders cluster",
    "type": "MSK_MULTI_VPC",
    "mskClusterArn": "arn:aws:kafka:us-east-1:1:cluster/orders/1",
    "mskAuthentication": "SASL_IAM",
}
LIVE_ENDPOINT = {
    **{k: v for k, v in ENDPOINT_SPEC.items() if k != "organizationId"},
    "id": "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51",
    "customPrivateDnsMappings": [],
    "status": "Ready",
}
ENDPOINT = Resource("ReversePrivateEndpoint", "msk-orders", ENDPOINT_SPEC, "e.yaml")
CDC = Resource(
    "CdcScaling", "cdc", {"organizationId": ORG, "serviceId": SVC, "replicaMemoryGb": 16}, "c.yaml"
)
DASHBOARD = Resource("Dashboard", "ops", {"name": "Ops", "panels": []}, "d.yaml")
CASES = {
    "pinned-and-equal-is-unchanged": Case(
        (pipe(pipeId="pipe-1"),),
        lists(listed(LIVE_PIPE)),
        {"Pipe/orders": (Op.NOOP, Bound.PINNED)},
    ),
    "adopted-by-spec-name-and-updated": Case(
        (pipe(settings={"engine_max_threads": 8}),),
        lists(listed(LIVE_PIPE)),
        {"Pipe/orders": (Op.UPDATE, Bound.ADOPTED)},
    ),
    "no-live-match-is-created": Case(
        (pipe("fresh", name="fresh"),),
        lists(listed(LIVE_PIPE)),
        {"Pipe/fresh": (Op.CREATE, Bound.NEW)},
    ),
    "recorded-id-binds-a-renamed-live-pipe": Case(
        (pipe(name="orders-v2"),),
        lists(listed(LIVE_PIPE)),
        {"Pipe/orders": (Op.UPDATE, Bound.RECORDED)},
        state=lambda: recorded(Pipe__orders={"id": "pipe-1", **TARGET}),
    ),
    "a-malformed-list-is-each-pipes-error": Case(
        (pipe(pipeId="pipe-1"),),
        lists(PipeList(decode=malformed)),
        {"Pipe/orders": (Op.ERROR, "not a list of pipes")},
    ),
    "a-failed-list-is-each-pipes-error": Case(
        (pipe(pipeId="pipe-1"),),
        lists(PipeList(error="pipes of service svc-1: 500 boom")),
        {"Pipe/orders": (Op.ERROR, "500 boom")},
    ),
    "two-manifests-pinned-to-one-pipe-are-both-errors": Case(
        (pipe(pipeId="pipe-1"), pipe("again", pipeId="pipe-1")),
        lists(listed(LIVE_PIPE)),
        {
            "Pipe/orders": (Op.ERROR, "bound to two manifests"),
            "Pipe/again": (Op.ERROR, "bound to two manifests"),
        },
    ),
    "an-unknown-service-name-is-an-error": Case(
        (Resource("Pipe", "orders", {"organizationId": ORG, "service": "nope", **DESIRED}, "m"),),
        LiveSnapshot(services={ORG: ({"id": SVC, "name": "analytics"},)}),
        {"Pipe/orders": (Op.ERROR, "service 'nope' not found")},
    ),
    "without-a-list-a-pinned-pipe-is-its-own-read": Case(
        (pipe(pipeId="pipe-1"),),
        LiveSnapshot(
            pipes_read={f"/v1/organizations/{ORG}/services/{SVC}/pipes/pipe-1": LIVE_PIPE},
            capabilities=Capabilities(pipes_list=False),
        ),
        {"Pipe/orders": (Op.NOOP, Bound.PINNED)},
    ),
    "without-a-list-an-unpinned-pipe-cannot-be-made": Case(
        (pipe(),),
        LiveSnapshot(capabilities=Capabilities(pipes_list=False)),
        {"Pipe/orders": (Op.ERROR, "cannot list or create pipes")},
    ),
    "prune-deletes-a-created-pipe-still-there": Case(
        (),
        LiveSnapshot(retired={"Pipe/gone": LIVE_PIPE}),
        {"Pipe/gone": (Op.DELETE, Bound.RECORDED)},
        state=lambda: recorded(Pipe__gone={"id": "pipe-1", "createdByUs": True, **TARGET}),
        options=PlanOptions(prune=True),
    ),
    "prune-skips-a-created-pipe-already-gone": Case(
        (),
        LiveSnapshot(retired={"Pipe/gone": None}),
        {},
        state=lambda: recorded(Pipe__gone={"id": "pipe-1", "createdByUs": True, **TARGET}),
        options=PlanOptions(prune=True),
    ),
    "prune-reports-a-failed-read": Case(
        (),
        LiveSnapshot(retired={"Pipe/gone": "pipe gone: 503 busy"}),
        {"Pipe/gone": (Op.ERROR, "503 busy")},
        state=lambda: recorded(Pipe__gone={"id": "pipe-1", "createdByUs": True, **TARGET}),
        options=PlanOptions(prune=True),
    ),
    "an-endpoint-is-adopted-from-its-services-list-by-description": Case(
        (ENDPOINT,),
        LiveSnapshot(endpoints={ENDPOINT.key: ServiceEndpoints(ORG, SVC, (LIVE_ENDPOINT,))}),
        {ENDPOINT.key: (Op.NOOP, Bound.ADOPTED)},
    ),
    "an-endpoint-its-service-does-not-list-is-created": Case(
        (ENDPOINT,),
        LiveSnapshot(endpoints={ENDPOINT.key: ServiceEndpoints(ORG, SVC, ())}),
        {ENDPOINT.key: (Op.CREATE, Bound.NEW)},
    ),
    "cdc-scaling-is-its-services-and-updated": Case(
        (CDC,),
        LiveSnapshot(cdc={CDC.key: ServiceCdc(ORG, SVC, live={"replicaMemoryGb": 8})}),
        {CDC.key: (Op.UPDATE, None)},
    ),
    "a-dashboard-is-adopted-from-the-list-by-display-name": Case(
        (DASHBOARD,),
        LiveSnapshot(
            dashboards=({"id": "d-1", "name": "Ops", "panels": []},),
            capabilities=Capabilities(dashboards_list=True),
        ),
        {DASHBOARD.key: (Op.NOOP, Bound.ADOPTED)},
    ),
    "a-dashboard-list-error-is-each-dashboards-error": Case(
        (DASHBOARD,),
        LiveSnapshot(dashboards_error="dashboards: 502 bad gateway"),
        {DASHBOARD.key: (Op.ERROR, "502 bad gateway")},
    ),
    "an-unreadable-organization-is-compared-with-recorded-values": Case(
        (Resource("Organization", "acme", {"organizationId": ORG, "name": "Acme"}, "o.yaml"),),
        LiveSnapshot(capabilities=Capabilities(organization_get=False)),
        {"Organization/acme": (Op.NOOP, None)},
        state=lambda: recorded(Organization__acme={"observed": {"name": "Acme"}}),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_plan_from_a_snapshot_binds_and_plans_each_manifest(name: str) -> None:
    case = CASES[name]
    plan = plan_snapshot(list(case.desired), case.snapshot, case.state(), case.options)
    got = {a.key: a for a in plan.actions}
    assert sorted(got) == sorted(case.expected)
    for key, (operation, how) in case.expected.items():
        action = got[key]
        assert action.operation is operation, action.errors
        if isinstance(how, Bound) or how is None:
            assert action.bound == how
        else:
            assert how in " ".join(action.errors)


def test_pipe_lists_are_decoded_one_at_a_time_each_planned_before_the_next() -> None:
    events: list[str] = []

    def decoded(service: str, *pipes: JsonObject) -> PipeList:
        def decode() -> list[JsonObject]:
            events.append(f"decode {service}")
            return [dict(p) for p in pipes]

        return PipeList(decode=decode)

    desired = [
        Resource("Pipe", f"p{i}", {"organizationId": ORG, "serviceId": s, **DESIRED}, "m")
        for i, s in enumerate(["svc-1", "svc-2", "svc-1", "svc-2"])
    ]
    snapshot = LiveSnapshot(
        pipe_lists={(ORG, "svc-1"): decoded("svc-1"), (ORG, "svc-2"): decoded("svc-2")},
        capabilities=Capabilities(pipes_list=True),
    )
    plan = plan_snapshot(
        desired,
        snapshot,
        new_state("memory"),
        PlanOptions(),
        release=lambda r: events.append(f"planned {r.spec['serviceId']}"),
    )
    assert events == [
        "decode svc-1",
        "planned svc-1",
        "planned svc-1",
        "decode svc-2",
        "planned svc-2",
        "planned svc-2",
    ]
    # The plan keeps the manifests' order whatever order the lists were planned in.
    assert [a.name for a in plan.actions] == ["p0", "p1", "p2", "p3"]


def test_what_a_plan_reads_is_what_its_manifests_and_state_name() -> None:
    state = recorded(
        Pipe__orders={"id": "pipe-9", **TARGET},
        Pipe__gone={"id": "pipe-7", "createdByUs": True, **TARGET},
    )
    needs = wanted([pipe(), pipe("pinned", pipeId="pipe-1")], state, PlanOptions(prune=True))
    assert [(n.key, n.pipe_id(SVC)) for n in needs.pipes] == [
        ("Pipe/orders", "pipe-9"),
        ("Pipe/pinned", "pipe-1"),
    ]
    assert [(n.key, n.id) for n in needs.retired] == [("Pipe/gone", "pipe-7")]
    assert needs.dashboards is False
    assert wanted([pipe()], state, PlanOptions()).retired == ()


# The names through which a module could send a request: the client, the read layer, the refresh.
SENDS = {
    ("reconciler.client.api", "Client"),
    ("reconciler.client", "reads"),
    ("reconciler.client.reads", "*"),
    ("reconciler.client.live", "refresh"),
}


def _senders(path: Path) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                for module, name in ((node.module, alias.name), (node.module, "*")):
                    if (module, name) in SENDS:
                        found.add((module, alias.name))
        elif isinstance(node, ast.Import):
            found.update((a.name, "*") for a in node.names if (a.name, "*") in SENDS)
    return found


def test_only_the_engines_entry_points_in_plan_can_send_a_request() -> None:
    # Binding, pruning and planning are pure: the refresh is the one read, apply the one write.
    plan = Path(reconciler.plan.__file__).parent
    senders = {p.name for p in sorted(plan.glob("*.py")) if _senders(p)}
    assert senders == {"compute.py", "run.py"}
