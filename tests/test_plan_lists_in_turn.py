"""Large pipe lists read in turn: the next list is requested while the current one is planned.

Against the in-process emulator (three services; ``LARGE_LIST`` lowered so that a few pipes
make a "large" list), a plan that reads the lists in turn, each fetched ahead as bytes, must
equal the plan that reads every list at once — the same actions, text and plan file — also
when a list request fails or answers a body that is not a pipe list; and a list read ahead is
decoded only once every pipe of the list before it is planned (one parsed list at a time).
Small lists are all requested as soon as the first one's bytes are in, before it is decoded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.manifests_gen import write_manifests
from reconciler.client import responses
from reconciler.client.paths import pipes_path
from reconciler.emulator.protocol import DEMO_ORG_ID
from reconciler.emulator.seed import scale_service_id
from reconciler.load.manifests import load_resources
from reconciler.model.resources import Resource
from reconciler.plan import planfile
from reconciler.plan.actions import Action, Plan
from reconciler.plan.compute import PlanOptions, plan_resource, plan_resources
from reconciler.plan.render import render_text
from reconciler.state.document import new_state
from tests.support.asgi import BASE, config, emulator_app

PIPES = 12
SERVICES = 3


class Faulty(httpx.AsyncBaseTransport):
    """The emulator app behind ASGI, logging each request; one path may get a canned answer."""

    def __init__(self, app: Any, events: list[str], fail: tuple[str, httpx.Response] | None):
        self.inner = httpx.ASGITransport(app=app)
        self.events = events
        self.fail = fail

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.events.append(f"GET {request.url.path}")
        if self.fail is not None and request.url.path == self.fail[0]:
            canned = self.fail[1]
            return httpx.Response(
                canned.status_code, headers=canned.headers, content=canned.content
            )
        return await self.inner.handle_async_request(request)


def list_path(service: int) -> str:
    return pipes_path(DEMO_ORG_ID, scale_service_id(service))


async def _plan(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    large: int,
    fail: tuple[str, httpx.Response] | None = None,
) -> tuple[Plan, list[str]]:
    from reconciler.client.api import Client

    resources = load_resources([tmp_path / "m"], positions=True)
    state = new_state(str(tmp_path / "state.json"))
    app = emulator_app()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as admin:
        reply = await admin.post(
            "/_emulator/reset",
            json={"seedPipes": PIPES, "services": SERVICES},
            auth=("demo-key-id", "demo-key-secret"),
        )
        reply.raise_for_status()
    events: list[str] = []

    def spy(resource: Resource, *args: Any) -> Action:
        if resource.kind == "Pipe":
            events.append(f"plan {resource.spec.get('service')}")
        return plan_resource(resource, *args)

    decode = responses.Undecoded.payload

    def decoding(self: responses.Undecoded) -> Any:
        events.append(f"decode {self.path}")
        return decode(self)

    with monkeypatch.context() as patch:
        patch.setattr("reconciler.client.pipereads.LARGE_LIST", large)
        patch.setattr("reconciler.client.pipereads.YIELD_AFTER", 0.0)
        patch.setattr("reconciler.plan.compute.plan_resource", spy)
        patch.setattr(responses.Undecoded, "payload", decoding)
        transport = Faulty(app, events, fail)
        async with Client(config(parallelism=4), transport=transport) as client:
            plan = await plan_resources(client, resources, state, PlanOptions())
    return plan, events


def _same_plan(in_turn: Plan, at_once: Plan) -> None:
    assert in_turn.actions == at_once.actions
    assert render_text(in_turn, color=False) == render_text(at_once, color=False)
    # The two plans are made a moment apart: createdAt may fall in different seconds.
    documents = [planfile.plan_to_json(p) for p in (in_turn, at_once)]
    for document in documents:
        document.pop("createdAt")
    assert documents[0] == documents[1]


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=PIPES // 2)
    return tmp_path


def test_lists_in_turn_should_request_the_next_list_while_planning_and_equal_lists_at_once(
    manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_turn, events = asyncio.run(_plan(manifests, monkeypatch, large=2))
    at_once, _ = asyncio.run(_plan(manifests, monkeypatch, large=10**9))
    _same_plan(in_turn, at_once)
    assert in_turn.summary()["update"] == PIPES // 2
    assert in_turn.requests_made == at_once.requests_made
    planned = {
        s: [i for i, e in enumerate(events) if e == f"plan {s}"]
        for s in ("bench-01", "bench-02", "bench-03")
    }
    # Service 2's list is asked for while service 1's pipes are planned, service 3's while
    # service 2's are...
    assert events.index(f"GET {list_path(2)}") < planned["bench-01"][-1]
    assert events.index(f"GET {list_path(3)}") < planned["bench-02"][-1]
    # ...but each is decoded only once every pipe of the list before it is planned.
    assert planned["bench-01"][-1] < events.index(f"decode {list_path(2)}") < planned["bench-02"][0]
    assert planned["bench-02"][-1] < events.index(f"decode {list_path(3)}") < planned["bench-03"][0]


def test_small_lists_should_all_be_requested_before_the_first_is_decoded(
    manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, events = asyncio.run(_plan(manifests, monkeypatch, large=10**9))
    first_decoded = events.index(f"decode {list_path(1)}")
    assert events.index(f"GET {list_path(1)}") < first_decoded
    # Each request of the opening burst sent earlier frees its place of the rate budget
    # earlier for the rest of the run.
    assert events.index(f"GET {list_path(2)}") < first_decoded
    assert events.index(f"GET {list_path(3)}") < first_decoded


def test_large_lists_should_request_only_the_next_before_the_first_is_decoded(
    manifests: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, events = asyncio.run(_plan(manifests, monkeypatch, large=2))
    first_decoded = events.index(f"decode {list_path(1)}")
    assert events.index(f"GET {list_path(2)}") < first_decoded
    assert events.index(f"GET {list_path(3)}") > first_decoded  # one parsed list at a time


ERROR_BODY = b'{"status": 500, "requestId": "req-boom", "error": "INTERNAL_ERROR: the list broke"}'
FAULTS = {
    "server error": httpx.Response(500, content=ERROR_BODY),
    "not json": httpx.Response(200, content=b"<html>maintenance</html>"),
    "no envelope": httpx.Response(200, content=b'{"status": 200, "items": []}'),
    "not found": httpx.Response(404, content=b'{"status": 404, "error": "NOT_FOUND: no list"}'),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("service", [2, 3])
def test_a_failed_list_read_ahead_should_be_reported_exactly_as_a_list_read_at_once(
    manifests: Path, monkeypatch: pytest.MonkeyPatch, fault: str, service: int
) -> None:
    fail = (list_path(service), FAULTS[fault])
    in_turn, _ = asyncio.run(_plan(manifests, monkeypatch, large=2, fail=fail))
    at_once, _ = asyncio.run(_plan(manifests, monkeypatch, large=10**9, fail=fail))
    _same_plan(in_turn, at_once)
    failed = [a for a in in_turn.actions if a.errors]
    assert len(failed) == PIPES // SERVICES
    assert all(f"pipes of service {scale_service_id(service)}" in a.errors[0] for a in failed)
    assert in_turn.summary()["update"] + in_turn.summary()["unchanged"] == PIPES - len(failed)
