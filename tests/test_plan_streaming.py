"""Streaming plans: each pipe is planned as soon as its live object arrives, output unchanged.

Against the in-process emulator (spec-only, so one GET per pipe, with latency so answers
overlap), ``plan_resources`` must hand pipes to the planner while other reads are still in
flight, and still produce exactly the plan that planning everything after the fetch gives,
in manifest order, whatever order the answers came back in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.manifests_gen import write_manifests
from reconciler.client.api import Client
from reconciler.client.live import Fetcher
from reconciler.load.manifests import load_resources
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Plan
from reconciler.plan.compute import PlanOptions, plan_resource, plan_resources
from reconciler.plan.render import render_text
from reconciler.state.document import new_state
from tests.support.asgi import config, emulator_app, in_process

PIPES = 12


def test_plan_should_plan_pipes_while_reads_are_in_flight_and_equal_the_batch_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_manifests(tmp_path / "m", PIPES, 2, changed=PIPES // 2)
    resources = load_resources([tmp_path / "m"], positions=True)
    state = new_state(str(tmp_path / "state.json"))
    app = emulator_app(spec_only=True, latency_ms=20)
    answered = [0]
    answered_when_planned: list[int] = []

    def spy(resource: Resource, *args: Any) -> Action:
        if resource.kind == "Pipe":
            answered_when_planned.append(answered[0])
        return plan_resource(resource, *args)

    async def main() -> tuple[Plan, Plan]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as admin:
            reply = await admin.post(
                "/_emulator/reset",
                json={"seedPipes": PIPES, "services": 2},
                auth=("demo-key-id", "demo-key-secret"),
            )
            reply.raise_for_status()
        async with in_process(app, parallelism=3) as (client, _):
            with monkeypatch.context() as patch:
                patch.setattr("reconciler.plan.compute.plan_resource", spy)
                streamed = await plan_resources(
                    client,
                    resources,
                    state,
                    PlanOptions(),
                    progress=lambda n: answered.__setitem__(0, answered[0] + n),
                )
        async with in_process(app, parallelism=3) as (client, _):
            live = await Fetcher(client).fetch(resources)
            batch = Plan(
                actions=tuple(plan_resource(r, live, state, PlanOptions()) for r in resources),
                requests_made=streamed.requests_made,
                notes=tuple(live.notes),
                dashboards_listable=live.capabilities.dashboards_list,
            )
        return streamed, batch

    streamed, batch = asyncio.run(main())
    assert len(answered_when_planned) == PIPES
    assert answered_when_planned[0] < answered[0]  # the first pipe was planned mid-fetch
    assert [a.name for a in streamed.actions] == [r.name for r in resources]
    assert streamed.actions == batch.actions
    assert render_text(streamed, color=False) == render_text(batch, color=False)


class _Concurrency(httpx.ASGITransport):
    """An in-process transport that records the most requests it ever had in flight."""

    def __init__(self, app: Any) -> None:
        super().__init__(app=app)
        self.now = 0
        self.most = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            return await super().handle_async_request(request)
        finally:
            self.now -= 1


def test_without_a_list_endpoint_all_services_pipes_should_be_read_from_one_queue(
    tmp_path: Path,
) -> None:
    # 3 services of 4 pipes, parallelism 16: all 12 GETs fit at once. Reading the first
    # service's pipes before starting the others' ran at most 4 at a time for a while.
    write_manifests(tmp_path / "m", 12, 3, changed=0)
    resources = load_resources([tmp_path / "m"], positions=True)
    app = emulator_app(spec_only=True, latency_ms=50)

    async def main() -> int:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1"
        ) as admin:
            reply = await admin.post(
                "/_emulator/reset",
                json={"seedPipes": 12, "services": 3},
                auth=("demo-key-id", "demo-key-secret"),
            )
            reply.raise_for_status()
        transport = _Concurrency(app)
        async with Client(config(parallelism=16), transport=transport) as client:
            live = await Fetcher(client).fetch(resources)
        assert all(o.live is not None for o in live.pipes.values())
        return transport.most

    assert asyncio.run(main()) == 12
