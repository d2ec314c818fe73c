"""A list the tool binds by is read whole, or it is an error: never "no objects".

The pipe list, the services list and the dashboard list decide which live object each
manifest is (recorded, adopted by name, or new). An answer 200 whose body is not a list of the
documented objects (``null``, an object, a list of strings, items without ``id``/``name``) is
an error for every resource that depends on it, naming the request, the status, the requestId
and what was wrong with the body, exactly as a body that is not JSON is: nothing is created,
adopted or pruned from it. An object read (a pipe by id) likewise refuses a body that is not
the object asked for. In-process against the emulator app, through a transport that
rewrites its answers as a misbehaving proxy would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from reconciler.apply.applier import Applier
from reconciler.apply.results import ActionResult, Outcome
from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.paths import PipeIds
from reconciler.emulator import EmulatorApp
from reconciler.model.apierrors import ApiError, MalformedAnswer
from reconciler.model.resources import Resource
from reconciler.plan.actions import Op, Plan
from reconciler.plan.compute import PlanOptions, plan_resources
from reconciler.state.document import State, new_state
from tests.support.asgi import KEEP, RewritingTransport, config, emulator_app
from tests.support.pipes import kafka_spec
from tests.support.seed_ids import KAFKA_PIPE, ORG_ID, PIPE_SERVICE

# Each malformed ``result`` and what the error says was wrong with it.
MALFORMED: list[tuple[Any, str]] = [
    (None, "`result` is null, not a list"),
    ({"id": "x", "name": "returns"}, "`result` is an object, not a list"),
    (["returns", "orders"], "`result[0]` is a string, not an object"),
    ([{"name": "returns"}], "`result[0]` has no `id`"),
    ([{"id": "0b5e7d1c-0000-4000-8000-000000000001"}], "`result[0]` has no `name`"),
]
IDS = ["null", "object", "strings", "no-id", "no-name"]


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_USER", "u")
    monkeypatch.setenv("KAFKA_PASSWORD", "p")


def _lists(suffix: str, result: Any) -> Any:
    """A rewrite replacing the ``result`` (or ``data``) of every GET whose path ends so."""

    def rewrite(request: httpx.Request, body: Any) -> Any:
        if request.method != "GET" or not request.url.path.endswith(suffix):
            return KEEP
        member = "data" if request.url.path.startswith("/api/v2") else "result"
        return {**body, member: result}

    return rewrite


def _plan_and_apply(
    app: EmulatorApp, state: State, resources: list[Resource], rewrite: Any
) -> tuple[Plan, tuple[ActionResult, ...]]:
    async def go() -> tuple[Plan, tuple[ActionResult, ...]]:
        transport = RewritingTransport(app, rewrite)
        async with Client(config(), transport=transport) as client:
            plan = await plan_resources(client, resources, state, PlanOptions(prune=True))
            return plan, await Applier(client, state).apply(plan)

    return asyncio.run(go())


def _posts(app: EmulatorApp) -> list[dict[str, Any]]:
    return [e for e in app.runtime.log if e["method"] == "POST"]


def _created_pipe(app: EmulatorApp, state: State) -> str:
    """Create ``returns`` normally (the record is then what a malformed list must not undo)."""
    resource = Resource("Pipe", "returns", kafka_spec(), "returns.yaml")
    plan, results = _plan_and_apply(app, state, [resource], lambda request, body: KEEP)
    assert [a.operation for a in plan.actions] == [Op.CREATE]
    assert [r.outcome for r in results] == [Outcome.APPLIED], results
    record = state.record_of("Pipe", "returns")
    assert record is not None and record.id
    return record.id


@pytest.mark.parametrize(("result", "wrong"), MALFORMED, ids=IDS)
def test_a_malformed_pipe_list_is_an_error_and_creates_nothing(result: Any, wrong: str) -> None:
    app, state = emulator_app(), new_state("memory")
    state.sink = lambda data: None
    pipe_id = _created_pipe(app, state)
    app.runtime.log.clear()
    before = {k: dict(v) for k, v in state.resources.items()}
    resource = Resource("Pipe", "returns", kafka_spec(), "returns.yaml")

    plan, results = _plan_and_apply(app, state, [resource], _lists("/pipes", result))

    (action,) = plan.actions
    assert action.operation is Op.ERROR and not action.requests
    (message,) = action.errors
    assert "pipes of service" in message and "HTTP 200" in message, message
    assert "GET /v1/organizations/" in message and "/pipes" in message, message
    assert wrong in message, message
    assert "requestId " in message, message
    assert [r.outcome for r in results] == [Outcome.FAILED]
    assert _posts(app) == []  # no second pipe
    assert [
        p["id"] for p in app.runtime.store.data["pipes"].values() if p["name"] == "returns"
    ] == [pipe_id]
    assert {k: {**v, "appliedAt": None} for k, v in state.resources.items()} == {
        k: {**v, "appliedAt": None} for k, v in before.items()
    }  # the record still binds the manifest to its pipe


def _refused(resource: Resource, rewrite: Any) -> str:
    """Plan and apply ``resource`` from a fresh state; return the one error of its action
    (nothing is sent: the action failed and no object was created)."""
    app, state = emulator_app(), new_state("memory")
    state.sink = lambda data: None
    plan, results = _plan_and_apply(app, state, [resource], rewrite)
    (action,) = plan.actions
    assert action.operation is Op.ERROR and not action.requests
    assert [r.outcome for r in results] == [Outcome.FAILED]
    assert _posts(app) == []
    (message,) = action.errors
    return message


@pytest.mark.parametrize(("result", "wrong"), MALFORMED, ids=IDS)
def test_a_malformed_services_list_is_an_error_for_each_pipe_naming_a_service(
    result: Any, wrong: str
) -> None:
    resource = Resource("Pipe", "returns", kafka_spec(), "returns.yaml")
    message = _refused(resource, _lists("/services", result))
    assert f"services of organization {ORG_ID}: HTTP 200" in message, message
    assert f"GET /v1/organizations/{ORG_ID}/services" in message, message
    assert wrong in message and "requestId " in message, message


@pytest.mark.parametrize(("result", "wrong"), MALFORMED, ids=IDS)
def test_a_malformed_dashboard_list_is_an_error_and_creates_no_dashboard(
    result: Any, wrong: str
) -> None:
    spec = {"name": "Ops", "tiles": [{"name": "rows", "x": 0, "y": 0, "w": 6, "h": 3}]}
    resource = Resource("Dashboard", "ops", spec, "ops.yaml")
    message = _refused(resource, _lists("/dashboards", result))
    assert "dashboards list: HTTP 200" in message and "GET /api/v2/dashboards" in message
    assert wrong.replace("result", "data") in message, message


@pytest.mark.parametrize(("result", "wrong"), MALFORMED, ids=IDS)
def test_every_list_read_refuses_a_body_it_cannot_read_whole(result: Any, wrong: str) -> None:
    """The one read layer: each list read raises the same typed error for a malformed body."""
    app = emulator_app()

    async def go() -> list[ApiError]:
        errors: list[ApiError] = []
        transport = RewritingTransport(app, _lists("s", result))  # services, pipes, dashboards
        async with Client(config(), transport=transport) as client:
            calls = [
                reads.list_services(client, ORG_ID),
                reads.list_pipes(client, ORG_ID, "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"),
                reads.list_dashboards(client),
            ]
            for call in calls:
                with pytest.raises(MalformedAnswer) as caught:
                    await call
                errors.append(caught.value)
            undecoded = await reads.list_pipes_undecoded(
                client, ORG_ID, "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
            )
            with pytest.raises(MalformedAnswer) as caught:
                undecoded()
            errors.append(caught.value)
        return errors

    errors = asyncio.run(go())
    assert [e.status for e in errors] == [200, 200, 200, 200]
    assert all(e.request_id for e in errors[:2] + errors[3:]), errors  # management answers
    for error in errors:
        assert wrong.replace("result", "data") in str(error) or wrong in str(error), error


@pytest.mark.parametrize(
    ("result", "wrong"),
    [
        (None, "`result` is null, not an object"),
        (["x"], "`result` is a list, not an object"),
        ({"name": "returns"}, "`result` has no `id`"),
        ({"id": 7}, "`result.id` is a number, not a string"),
    ],
    ids=["null", "list", "no-id", "numeric-id"],
)
def test_a_pipe_read_refuses_a_body_that_is_not_the_pipe_asked_for(result: Any, wrong: str) -> None:
    app = emulator_app()
    ids = PipeIds(ORG_ID, PIPE_SERVICE[KAFKA_PIPE], KAFKA_PIPE)

    async def go() -> MalformedAnswer:
        transport = RewritingTransport(app, _lists(KAFKA_PIPE, result))
        async with Client(config(), transport=transport) as client:
            with pytest.raises(MalformedAnswer) as caught:
                await reads.get_pipe(client, ids, name="orders")
        return caught.value

    error = asyncio.run(go())
    assert error.status == 200 and error.request_id, error
    assert str(error).startswith(
        f"pipe orders: HTTP 200: GET {ids.path} answered a body that is not the pipe asked for"
    )
    assert wrong in str(error), error
