"""Prune deletes only the pipes this tool created, and knows when it stopped owning one.

Ownership (the state's "created by us" mark) is set only by a create whose answer proves it,
or, after a lost answer, by adopting the pipe that shows the exact body that create sent. An
adopted pipe is never ours otherwise, whatever the record said before: the tool's own pipe
deleted on the server and replaced by a hand-made one of the same name is adopted as someone
else's, and ``--prune`` leaves it alone. A create answered 500 that did happen is adopted by
the next run as the tool's own, so ``--prune`` retires it once its manifest is gone.
In-process against the emulator app.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from reconciler.apply.applier import Applier
from reconciler.apply.results import ActionResult, Outcome
from reconciler.client.api import Client
from reconciler.emulator import EmulatorApp
from reconciler.model.resources import Resource
from reconciler.plan.actions import Op, Plan
from reconciler.plan.compute import PlanOptions, plan_resources
from reconciler.state.document import State, new_state
from tests.support.asgi import RewritingTransport, config, emulator_app
from tests.support.pipes import kafka_spec


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_USER", "u")
    monkeypatch.setenv("KAFKA_PASSWORD", "p")


def _manifest(*, theirs: bool = False) -> Resource:
    """``rt1`` as this project states it, or (``theirs``) as someone else's differs from it."""
    spec = kafka_spec(name="rt1", topics="rt1")
    if theirs:  # a field an update may change: adopting it is not an error
        spec["fieldMappings"] = [
            {"sourceField": "id", "destinationField": "id"},
            {"sourceField": "sum", "destinationField": "amount"},
        ]
    return Resource("Pipe", "rt1", spec, "rt1.yaml")


def _run(
    app: EmulatorApp,
    state: State,
    resources: list[Resource],
    *,
    prune: bool = False,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[Plan, tuple[ActionResult, ...]]:
    """One ``apply`` (with ``--prune`` when asked): its plan and its results."""

    async def go() -> tuple[Plan, tuple[ActionResult, ...]]:
        async with Client(config(), transport=transport or httpx.ASGITransport(app=app)) as client:
            plan = await plan_resources(client, resources, state, PlanOptions(prune=prune))
            return plan, await Applier(client, state).apply(plan)

    return asyncio.run(go())


def _pipes(app: EmulatorApp, name: str) -> list[dict[str, Any]]:
    return [p for p in app.runtime.store.data["pipes"].values() if p["name"] == name]


def _state() -> State:
    state = new_state("memory")
    state.sink = lambda data: None
    return state


def _replace_by_hand(app: EmulatorApp, pipe_id: str, *, theirs: bool) -> str:
    """Someone deletes pipe ``pipe_id`` on the server and makes their own ``rt1`` (their own
    tool, their own state); return the new pipe's id."""

    async def delete() -> None:
        async with Client(config(), transport=httpx.ASGITransport(app=app)) as client:
            (pipe,) = [p for p in _pipes(app, "rt1") if p["id"] == pipe_id]
            org = app.runtime.store.data["services"][pipe["serviceId"]]["organizationId"]
            path = f"/v1/organizations/{org}/services/{pipe['serviceId']}/pipes/{pipe_id}"
            await client.call("management", "DELETE", path, resource="rt1", idempotent=True)

    asyncio.run(delete())
    assert _pipes(app, "rt1") == []
    _, results = _run(app, _state(), [_manifest(theirs=theirs)])
    assert [r.outcome for r in results] == [Outcome.APPLIED], results
    (theirs,) = _pipes(app, "rt1")
    return str(theirs["id"])


def _deletes(app: EmulatorApp) -> list[dict[str, Any]]:
    return [e for e in app.runtime.log if e["method"] == "DELETE"]


def test_a_pipe_adopted_in_place_of_ours_is_never_pruned() -> None:
    app, state = emulator_app(), _state()
    _, results = _run(app, state, [_manifest()])
    assert [r.outcome for r in results] == [Outcome.APPLIED]
    (ours,) = _pipes(app, "rt1")
    theirs = _replace_by_hand(app, str(ours["id"]), theirs=False)  # same body, not ours

    plan, results = _run(app, state, [_manifest()])  # adopts theirs by name
    (action,) = plan.actions
    assert action.bound == "adopted" and action.target["pipeId"] == theirs
    assert not action.made_by_us
    assert action.warnings == (
        f"pipe {ours['id']} recorded in state no longer exists on the server; adopted pipe "
        f"{theirs} of that name, which this tool did not create (--prune never deletes it)",
    )
    record = state.record_of("Pipe", "rt1")
    assert record is not None and record.id == theirs
    assert not record.created_by_us, "an adopted pipe is never ours"

    app.runtime.log.clear()
    plan, results = _run(app, state, [], prune=True)  # the manifest removed
    assert [a.operation for a in plan.actions if a.operation is Op.DELETE] == []
    assert _deletes(app) == []
    assert [p["id"] for p in _pipes(app, "rt1")] == [theirs]


def _answers_500_to_creates(
    request: httpx.Request, response: httpx.Response
) -> httpx.Response | None:
    """The create happens on the server, but its answer is a 500."""
    if request.method == "POST" and request.url.path.endswith("/pipes"):
        assert response.status_code == 201 or response.status_code == 200, response
        body = {"status": 500, "requestId": "req-500", "error": "INTERNAL_ERROR: try again"}
        return httpx.Response(500, json=body)
    return None


def test_a_create_answered_500_that_happened_is_ours_and_pruned_later() -> None:
    app, state = emulator_app(), _state()
    transport = RewritingTransport(app, after=_answers_500_to_creates)
    _, results = _run(app, state, [_manifest()], transport=transport)
    (result,) = results
    assert result.outcome is Outcome.UNCERTAIN, result
    assert "HTTP 500" in result.messages[0] and "may have made it" in result.messages[0]
    assert "requestId req-500" in result.messages[0]
    (made,) = _pipes(app, "rt1")

    plan, results = _run(app, state, [_manifest()])  # the next run adopts it
    assert plan.actions[0].bound == "adopted" and plan.actions[0].target["pipeId"] == made["id"]
    assert not [a for a in plan.actions if a.operation is Op.CREATE]
    record = state.record_of("Pipe", "rt1")
    assert record is not None and record.id == made["id"]
    assert record.created_by_us, "the create this tool sent made it: it is ours"

    app.runtime.log.clear()
    plan, results = _run(app, state, [], prune=True)  # the manifest removed
    assert [(a.operation, a.target.get("pipeId")) for a in plan.actions] == [
        (Op.DELETE, made["id"])
    ]
    assert [r.outcome for r in results] == [Outcome.APPLIED], results
    assert _pipes(app, "rt1") == []


def test_after_a_create_answered_500_a_hand_made_pipe_of_that_name_is_not_ours() -> None:
    app, state = emulator_app(), _state()
    transport = RewritingTransport(app, after=_answers_500_to_creates)
    _run(app, state, [_manifest()], transport=transport)
    (made,) = _pipes(app, "rt1")
    theirs = _replace_by_hand(app, str(made["id"]), theirs=True)  # not the body sent

    plan, _ = _run(app, state, [_manifest()])  # adopts theirs (and updates its mappings)
    assert plan.actions[0].bound == "adopted" and plan.actions[0].target["pipeId"] == theirs
    record = state.record_of("Pipe", "rt1")
    assert record is not None and record.id == theirs and not record.created_by_us

    app.runtime.log.clear()
    plan, _ = _run(app, state, [], prune=True)
    assert _deletes(app) == []
    assert [p["id"] for p in _pipes(app, "rt1")] == [theirs]


class SendsAnotherBodyAndLosesTheAnswer(httpx.AsyncBaseTransport):
    """A pipe create reaches the server with other field mappings than the ones sent (someone
    else's pipe of that name, made at that moment), and its answer is lost."""

    def __init__(self, app: EmulatorApp) -> None:
        self.inner = httpx.ASGITransport(app=app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not (request.method == "POST" and request.url.path.endswith("/pipes")):
            return await self.inner.handle_async_request(request)
        body = json.loads(await request.aread())
        body["fieldMappings"] = _manifest(theirs=True).spec["fieldMappings"]
        other = httpx.Request("POST", request.url, headers=request.headers, json=body)
        response = await self.inner.handle_async_request(other)
        await response.aread()
        raise httpx.ReadError("connection dropped after the request", request=request)


def test_a_lost_create_adopts_only_a_pipe_showing_the_exact_body_sent() -> None:
    app, state = emulator_app(), _state()
    plan, results = _run(
        app, state, [_manifest()], transport=SendsAnotherBodyAndLosesTheAnswer(app)
    )
    assert [r.outcome for r in results] == [Outcome.UNCERTAIN], results
    (other,) = _pipes(app, "rt1")

    plan, _ = _run(app, state, [_manifest()])  # adopted, but not the body this tool sent
    assert plan.actions[0].target["pipeId"] == other["id"] and not plan.actions[0].made_by_us
    record = state.record_of("Pipe", "rt1")
    assert record is not None and record.id == other["id"] and not record.created_by_us

    app.runtime.log.clear()
    _run(app, state, [], prune=True)
    assert _deletes(app) == []
    assert [p["id"] for p in _pipes(app, "rt1")] == [other["id"]]
