"""An endpoint create whose answer is lost (the server made it, the connection dropped before
the answer) is never sent again: apply lists the service's endpoints, takes the one new
endpoint with that description, records it as created by this tool and waits for it to be
Ready. In-process against the emulator app (httpx.ASGITransport)."""

from __future__ import annotations

import asyncio

import httpx

from reconciler.apply.applier import Applier
from reconciler.apply.results import ActionResult, Outcome
from reconciler.apply.waiting import WaitOptions
from reconciler.client.api import Client
from reconciler.emulator import EmulatorApp
from reconciler.model.resources import Resource
from reconciler.plan.actions import Op
from reconciler.plan.compute import PlanOptions, plan_resources
from reconciler.state.document import State, new_state
from tests.support.asgi import config, emulator_app
from tests.support.pipes import MSK


class LosesEndpointCreateAnswers(httpx.AsyncBaseTransport):
    """Hands every request to the app; the answer to an endpoint create is lost."""

    def __init__(self, app: EmulatorApp) -> None:
        self.inner = httpx.ASGITransport(app=app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if request.method == "POST" and request.url.path.endswith("/pipesReversePrivateEndpoints"):
            await response.aread()
            raise httpx.ReadError("connection dropped after the request", request=request)
        return response


def _run(app: EmulatorApp, state: State) -> tuple[ActionResult, ...]:
    resource = Resource("ReversePrivateEndpoint", "msk-orders", MSK, "msk.yaml")

    async def go() -> tuple[ActionResult, ...]:
        async with Client(config(), transport=LosesEndpointCreateAnswers(app)) as client:
            plan = await plan_resources(client, [resource], state, PlanOptions())
            assert [a.operation for a in plan.actions] == [Op.CREATE]
            wait = WaitOptions(timeout=30, first_interval=0.05, max_interval=0.2)
            return await Applier(client, state, wait=wait).apply(plan)

    return asyncio.run(go())


def test_an_endpoint_create_whose_answer_is_lost_is_found_never_sent_twice() -> None:
    app, state = emulator_app(), new_state("memory")
    state.sink = lambda data: None
    (result,) = _run(app, state)
    assert result.outcome is Outcome.APPLIED, result.messages
    made = [
        e
        for e in app.runtime.store.data["reversePrivateEndpoints"].values()
        if e["description"] == MSK["description"]
    ]
    assert len(made) == 1 and made[0]["status"] == "Ready"
    assert len([e for e in app.runtime.log if e["method"] == "POST"]) == 1
    record = state.record_of("ReversePrivateEndpoint", "msk-orders")
    assert record is not None and record.id == made[0]["id"] and record.created_by_us
