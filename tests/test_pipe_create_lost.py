"""A pipe create whose answer is lost (the server made it, the connection dropped before the
answer) is never sent again: apply lists the service, adopts the one new pipe of that name and
records its id; with none found the action is uncertain and the next run decides. In-process
against the emulator app (httpx.ASGITransport)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from reconciler.apply.applier import Applier
from reconciler.apply.results import ActionResult, Outcome
from reconciler.client.api import Client
from reconciler.emulator import EmulatorApp
from reconciler.model.resources import Resource
from reconciler.plan.actions import Op
from reconciler.plan.compute import PlanOptions, plan_resources
from reconciler.state.document import State, new_state
from tests.support.asgi import config, emulator_app
from tests.support.pipes import kafka_spec


class LosesCreateAnswers(httpx.AsyncBaseTransport):
    """Hands every request to the app; the answer to a pipe create (or, with ``before``, the
    create itself) is lost as a dropped connection."""

    def __init__(self, app: EmulatorApp, *, before: bool = False) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.before = before

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        creates = request.method == "POST" and request.url.path.endswith("/pipes")
        if creates and self.before:
            raise httpx.ReadError("connection dropped before the request", request=request)
        response = await self.inner.handle_async_request(request)
        if creates:
            await response.aread()
            raise httpx.ReadError("connection dropped after the request", request=request)
        return response


def _run(app: EmulatorApp, state: State, *, before: bool) -> tuple[ActionResult, ...]:
    resource = Resource("Pipe", "returns", kafka_spec(), "returns.yaml")

    async def go() -> tuple[ActionResult, ...]:
        transport = LosesCreateAnswers(app, before=before)
        async with Client(config(), transport=transport) as client:
            plan = await plan_resources(client, [resource], state, PlanOptions())
            assert [a.operation for a in plan.actions] == [Op.CREATE]
            return await Applier(client, state).apply(plan)

    return asyncio.run(go())


def _named(app: EmulatorApp, name: str) -> list[dict[str, Any]]:
    return [p for p in app.runtime.store.data["pipes"].values() if p["name"] == name]


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_USER", "u")
    monkeypatch.setenv("KAFKA_PASSWORD", "p")


def test_a_create_whose_answer_is_lost_is_adopted_never_sent_twice() -> None:
    app, state = emulator_app(), new_state("memory")
    state.sink = lambda data: None
    (result,) = _run(app, state, before=False)
    (pipe,) = _named(app, "returns")
    assert result.outcome is Outcome.APPLIED, result.messages
    posts = [e for e in app.runtime.log if e["method"] == "POST"]
    assert len(posts) == 1  # never sent again
    record = state.record_of("Pipe", "returns")
    assert record is not None and record.id == pipe["id"] and record.created_by_us


def test_a_create_lost_before_the_server_saw_it_is_uncertain_and_sent_by_the_next_run() -> None:
    app, state = emulator_app(), new_state("memory")
    state.sink = lambda data: None
    (result,) = _run(app, state, before=True)
    assert result.outcome is Outcome.UNCERTAIN
    assert _named(app, "returns") == []
    record = state.record_of("Pipe", "returns")
    assert record is not None and record.uncertain and record.id is None
