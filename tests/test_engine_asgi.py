"""The refresh, the planning engine and the applier as units, against the emulator app in the
same event loop through ``httpx.ASGITransport`` (no sockets, no CLI): what each reads and how
often, its fallbacks on a server without the optional endpoints, and what the applier sends,
records and reports."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.manifests_gen import write_manifests
from reconciler.apply.applier import Applier
from reconciler.apply.results import Outcome
from reconciler.client.api import Client
from reconciler.client.live import LiveSnapshot, Observed, refresh
from reconciler.client.paths import pipes_path
from reconciler.emulator import EmulatorApp
from reconciler.emulator.protocol import DEMO_ORG_ID
from reconciler.emulator.seed import scale_service_id
from reconciler.load.manifests import load_resources
from reconciler.model.identity import Identities
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, Plan, Purpose, Request
from reconciler.plan.compute import PlanOptions, plan_resources, wanted
from reconciler.plan.kinds import organization_observed
from reconciler.plan.pipebinding import observe_pipes
from reconciler.state.document import State, new_state
from tests.support.asgi import BASE, config, emulator_app, in_process
from tests.support.seed_ids import (
    ANALYTICS,
    ENDPOINT_PROVISIONING,
    ENDPOINT_READY,
    KAFKA_IAM_USER_PIPE,
    KAFKA_PIPE,
    OBJECT_STORAGE_PIPE,
    ORG_ID,
    POSTGRES_PAUSED_PIPE,
)

MISSING = "0b5e7d1c-2a3f-4b6e-8c9d-000000000000"
POSTGRES_PATH = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{POSTGRES_PAUSED_PIPE}"


def _pipe(name: str, pipe_id: str, **spec: Any) -> Resource:
    base = {"organizationId": ORG_ID, "service": "analytics", "pipeId": pipe_id}
    return Resource("Pipe", name, {**base, **spec}, f"pipes/{name}.yaml")


def _gets(app: EmulatorApp) -> list[str]:
    return [e["path"].split("/v1/organizations/")[-1] for e in app.runtime.log]


@dataclass(frozen=True)
class _Seen:
    """What a refresh read, and what the planner makes of each pipe and organization."""

    snapshot: LiveSnapshot
    pipes: dict[str, Observed]
    organizations: dict[str, Observed]


def _fetch(app: EmulatorApp, resources: list[Resource], state: State | None = None) -> _Seen:
    state = state or new_state("memory")
    needs = dataclasses.replace(wanted(resources, state, PlanOptions()), dashboards=True)

    async def go() -> LiveSnapshot:
        async with in_process(app) as (client, _):
            return await refresh(client, needs)

    snapshot = asyncio.run(go())
    pipes = [r for r in resources if r.kind == "Pipe"]
    seen = observe_pipes(pipes, snapshot, Identities({}, {}))
    organizations = [r for r in resources if r.kind == "Organization"]
    return _Seen(
        snapshot,
        {s.resource.key: s.observed for s in seen},
        {r.key: organization_observed(r, snapshot, state) for r in organizations},
    )


def test_the_refresh_reads_the_services_once_and_the_pipes_through_one_list() -> None:
    app = emulator_app()
    live = _fetch(app, [_pipe("orders", KAFKA_PIPE), _pipe("events", OBJECT_STORAGE_PIPE)])
    assert live.pipes["Pipe/orders"].live is not None
    assert live.pipes["Pipe/events"].live is not None
    assert live.snapshot.capabilities.pipes_list is True
    paths = _gets(app)
    assert paths.count(f"{ORG_ID}/services") == 1
    assert paths.count(f"{ORG_ID}/services/{ANALYTICS}/pipes") == 1
    assert not any(p.endswith(KAFKA_PIPE) for p in paths)


def test_without_the_pipe_list_the_refresh_reads_one_pipe_each_and_says_so() -> None:
    app = emulator_app(spec_only=True)
    live = _fetch(app, [_pipe("orders", KAFKA_PIPE), _pipe("events", OBJECT_STORAGE_PIPE)])
    assert live.snapshot.capabilities.pipes_list is False
    assert live.pipes["Pipe/orders"].live is not None
    assert any("no pipe list" in note for note in live.snapshot.notes)
    assert live.snapshot.capabilities.dashboards_list is False
    assert any("no dashboard list" in note for note in live.snapshot.notes)


def test_a_missing_pipe_and_an_unknown_service_are_errors_of_those_pipes_only() -> None:
    app = emulator_app()
    live = _fetch(
        app,
        [
            _pipe("orders", KAFKA_PIPE),
            _pipe("ghost", MISSING),
            Resource(
                "Pipe",
                "elsewhere",
                {"organizationId": ORG_ID, "service": "nope", "pipeId": KAFKA_PIPE},
                "pipes/elsewhere.yaml",
            ),
        ],
    )
    assert live.pipes["Pipe/orders"].error is None
    assert f"pipe {MISSING} not found" in str(live.pipes["Pipe/ghost"].error)
    assert "service 'nope' not found" in str(live.pipes["Pipe/elsewhere"].error)


def test_each_endpoint_is_read_once_and_reported_with_its_status() -> None:
    app = emulator_app()
    endpoints = [ENDPOINT_READY, ENDPOINT_PROVISIONING, MISSING]
    kafka = {"source": {"kafka": {"reversePrivateEndpointIds": endpoints}}}
    # Two pipes of one service naming the same endpoints (two manifests may not share a pipe).
    pipes = [_pipe("orders", KAFKA_PIPE, **kafka), _pipe("again", KAFKA_IAM_USER_PIPE, **kafka)]
    live = _fetch(app, pipes)
    status = dict(live.pipes["Pipe/orders"].endpoint_status)
    assert status == {ENDPOINT_READY: "Ready", ENDPOINT_PROVISIONING: "Provisioning", MISSING: None}
    reads = [p for p in _gets(app) if "pipesReversePrivateEndpoints" in p]
    assert len(reads) == 3


def test_an_organization_the_server_cannot_read_is_compared_with_recorded_values() -> None:
    app = emulator_app(spec_only=True)
    org = Resource("Organization", "acme", {"organizationId": ORG_ID, "name": "Acme"}, "org.yaml")
    recorded = {"name": "Acme"}
    state = new_state("memory")
    state.resources["Organization/acme"] = {"observed": recorded}
    live = _fetch(app, [org], state)
    observed = live.organizations["Organization/acme"]
    assert (observed.live, observed.unknown) == (recorded, False)
    assert live.snapshot.capabilities.organization_get is False


def _memory_state() -> tuple[State, list[bytes]]:
    state = new_state("memory")
    written: list[bytes] = []
    state.sink = written.append
    return state, written


def _plan(app: EmulatorApp, resources: list[Resource], state: State) -> Plan:
    async def go() -> Plan:
        async with in_process(app) as (client, _):
            return await plan_resources(client, resources, state, PlanOptions())

    return asyncio.run(go())


def _apply(app: EmulatorApp, plan: Plan, state: State) -> tuple[Any, ...]:
    async def go() -> tuple[Any, ...]:
        async with in_process(app) as (client, _):
            return await Applier(client, state).apply(plan)

    return asyncio.run(go())


def test_the_engine_plans_one_patch_holding_only_the_changed_leaf_and_apply_converges() -> None:
    app = emulator_app()
    state, written = _memory_state()
    orders = _pipe("orders", KAFKA_PIPE, settings={"engine_max_threads": 12})
    plan = _plan(app, [orders], state)
    (action,) = plan.actions
    assert action.operation is Op.UPDATE
    assert [(r.method, r.body, r.purpose) for r in action.requests] == [
        ("PATCH", {"settings": {"engine_max_threads": 12}}, Purpose.UPDATE)
    ]
    (result,) = _apply(app, plan, state)
    assert result.outcome is Outcome.APPLIED
    assert [(r.status, r.outcome) for r in result.requests] == [(200, Outcome.APPLIED)]
    assert state.resources["Pipe/orders"]["managed"] == ["settings.engine_max_threads"]
    assert written, "the state is saved after the action"
    again = _plan(app, [orders], state)
    assert again.actions[0].operation is Op.NOOP


def test_the_applier_reports_a_refused_request_and_skips_the_rest_of_that_resource() -> None:
    app = emulator_app()
    path = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{MISSING}"
    requests = (
        Request("PATCH", path, {"name": "x"}),
        Request("PATCH", path, {"name": "y"}),
    )
    where = Resource("Pipe", "ghost", {}, "ghost.yaml").locate()
    plan = Plan((Action("Pipe", "ghost", Op.UPDATE, where, requests=requests),))
    (result,) = _apply(app, plan, _memory_state()[0])
    assert result.outcome is Outcome.FAILED and result.failed
    first, second = result.requests
    assert (first.status, first.outcome) == (404, Outcome.FAILED)
    assert first.request_id
    assert second.outcome is Outcome.SKIPPED
    writes = [e for e in app.runtime.log if e["method"] == "PATCH"]
    assert len(writes) == 1


def test_a_stale_action_is_not_sent() -> None:
    app = emulator_app()
    state, _ = _memory_state()
    plan = _plan(app, [_pipe("orders", KAFKA_PIPE, settings={"engine_max_threads": 12})], state)

    async def go() -> tuple[Any, ...]:
        async with in_process(app) as (client, _):
            stale: Mapping[str, str] = {"Pipe/orders": "stale plan for pipe orders"}
            return await Applier(client, state).apply(plan, stale=stale)

    (result,) = asyncio.run(go())
    assert (result.outcome, result.messages) == (Outcome.STALE, ("stale plan for pipe orders",))
    assert not [e for e in app.runtime.log if e["method"] == "PATCH"]


def _mapping(table: str, **fields: Any) -> dict[str, Any]:
    return {"sourceSchemaName": "public", "sourceTable": table, "targetTable": table, **fields}


def _out_of_band(app: EmulatorApp, body: dict[str, Any]) -> None:
    """Another writer (a killed run's request landing late) patches the postgres pipe."""

    async def go() -> None:
        transport = httpx.ASGITransport(app=app)
        auth = ("demo-key-id", "demo-key-secret")
        async with httpx.AsyncClient(transport=transport, base_url=BASE, auth=auth) as http:
            answer = await http.patch(POSTGRES_PATH, json=body)
            assert answer.status_code == 200, answer.text

    asyncio.run(go())


@pytest.mark.parametrize(
    ("landed", "running", "outcome", "patches"),
    [
        ("the-removal", False, Outcome.APPLIED, 2),
        ("the-whole-request", False, Outcome.APPLIED, 1),
        ("nothing", True, Outcome.FAILED, 1),
        ("the-removal", True, Outcome.FAILED, 2),
    ],
    ids=["removal-already-made", "request-already-made", "refused-for-itself", "rest-refused"],
)
def test_a_table_mapping_removal_already_made_is_converged_once_a_re_read_shows_it(
    landed: str, running: bool, outcome: Outcome, patches: int
) -> None:
    # A removal whose mapping is already gone (a killed run's request landing after this
    # run read the pipe) used to fail with 400 "table mapping ... does not exist". The re-read
    # decides, never the message: edits it shows made are dropped, the rest is sent once more.
    app = emulator_app()
    state, _ = _memory_state()
    customers = _mapping(
        "customers",
        excludedColumns=["ssn"],
        useCustomSortingKey=True,
        sortingKeys=["customer_id"],
        tableEngine="ReplacingMergeTree",
    )
    wanted = {"tableMappings": [customers, _mapping("orders")]}
    cdc = _pipe("customers-cdc", POSTGRES_PAUSED_PIPE, source={"postgres": wanted})
    plan = _plan(app, [cdc], state)
    (request,) = plan.actions[0].requests
    assert request.body == {
        "source": {
            "postgres": {
                "tableMappingsToRemove": [_mapping("addresses")],
                "tableMappingsToAdd": [_mapping("orders")],
            }
        }
    }
    if landed == "the-removal":
        _out_of_band(
            app, {"source": {"postgres": {"tableMappingsToRemove": [_mapping("addresses")]}}}
        )
    elif landed == "the-whole-request":
        _out_of_band(app, dict(request.body or {}))
    if running:
        app.runtime.store.data["pipes"][POSTGRES_PAUSED_PIPE]["state"] = "Running"
    app.runtime.log.clear()
    (result,) = _apply(app, plan, state)
    assert result.outcome is outcome, result.messages
    sent = [e for e in app.runtime.log if e["method"] == "PATCH"]
    assert len(sent) == patches
    live = app.runtime.store.data["pipes"][POSTGRES_PAUSED_PIPE]["source"]["postgres"]
    tables = sorted(m["sourceTable"] for m in live["tableMappings"])
    if outcome is Outcome.APPLIED:
        assert tables == ["customers", "orders"]
        assert _plan(app, [cdc], state).actions[0].operation is Op.NOOP
    else:
        assert "paused" in " ".join(result.messages).lower()
        assert "does not exist" not in " ".join(result.messages)


class _Canned(httpx.AsyncBaseTransport):
    """The emulator app behind ASGI; one path gets a canned answer; the most requests ever in
    flight at once are counted."""

    def __init__(self, app: Any, fail: tuple[str, httpx.Response] | None = None) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.fail = fail
        self.now = 0
        self.most = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.fail is not None and request.url.path == self.fail[0]:
            canned = self.fail[1]
            return httpx.Response(
                canned.status_code, headers=canned.headers, content=canned.content
            )
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            return await self.inner.handle_async_request(request)
        finally:
            self.now -= 1


def _scale_plan(
    tmp_path: Path, transport: Callable[[EmulatorApp], _Canned], **emulator: Any
) -> tuple[Plan, _Canned]:
    write_manifests(tmp_path / "m", 12, 3, changed=6)
    resources = load_resources([tmp_path / "m"], positions=True)
    app = emulator_app(**emulator)

    async def go() -> Plan:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as a:
            reset = {"seedPipes": 12, "services": 3}
            reply = await a.post(
                "/_emulator/reset", json=reset, auth=("demo-key-id", "demo-key-secret")
            )
            reply.raise_for_status()
        async with Client(config(parallelism=16), transport=wire) as client:
            return await plan_resources(client, resources, new_state("memory"), PlanOptions())

    wire = transport(app)
    return asyncio.run(go()), wire


ERROR_BODY = b'{"status": 500, "requestId": "req-boom", "error": "INTERNAL_ERROR: the list broke"}'
LIST_FAULTS = {
    "server error": httpx.Response(500, content=ERROR_BODY),
    "not json": httpx.Response(200, content=b"<html>maintenance</html>"),
    "no envelope": httpx.Response(200, content=b'{"status": 200, "items": []}'),
    "not found": httpx.Response(404, content=b'{"status": 404, "error": "NOT_FOUND: no list"}'),
}


@pytest.mark.parametrize("fault", sorted(LIST_FAULTS))
@pytest.mark.parametrize("service", [2, 3])
def test_a_failed_pipe_list_is_an_error_of_that_services_pipes_only(
    tmp_path: Path, fault: str, service: int
) -> None:
    path = pipes_path(DEMO_ORG_ID, scale_service_id(service))
    plan, _ = _scale_plan(tmp_path, lambda app: _Canned(app, (path, LIST_FAULTS[fault])))
    failed = [a for a in plan.actions if a.errors]
    assert len(failed) == 4
    assert all(f"pipes of service {scale_service_id(service)}" in a.errors[0] for a in failed)
    assert plan.summary()["update"] + plan.summary()["unchanged"] == 8


def test_without_a_list_endpoint_all_services_pipes_are_read_from_one_queue(
    tmp_path: Path,
) -> None:
    # 3 services of 4 pipes, parallelism 16: all 12 GETs fit at once. Reading the first
    # service's pipes before starting the others' ran at most 4 at a time for a while.
    plan, wire = _scale_plan(tmp_path, _Canned, spec_only=True, latency_ms=50)
    assert wire.most == 12
    assert not any(a.errors for a in plan.actions)
