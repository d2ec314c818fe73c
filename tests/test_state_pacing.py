"""The applier's state saves: urgent records (dashboards) stored before the action returns,
other records paced to at most one write per SAVE_INTERVAL and coalesced, the last changes
always stored by flush, and a failed write reported."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reconciler.apply import recorder as applier_module
from reconciler.apply.applier import Applier
from reconciler.model.errors import StateConflictError
from reconciler.state.document import new_state


class Sink:
    """Collects every document written."""

    def __init__(self, fail: bool = False) -> None:
        self.writes: list[bytes] = []
        self.fail = fail

    def __call__(self, data: bytes) -> None:
        if self.fail:
            raise StateConflictError("test")
        self.writes.append(data)


def _applier(sink: Sink) -> Applier:
    state = new_state("test")
    state.sink = sink
    return Applier(client=None, state=state)  # type: ignore[arg-type]


def test_many_quick_records_cost_few_writes_and_flush_stores_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(applier_module, "SAVE_INTERVAL", 60.0)
    sink = Sink()
    applier = _applier(sink)

    async def go() -> None:
        for n in range(200):
            applier.state.record(f"Pipe/p{n}", managed=["a"])
            await applier._persist(urgent=False)
            await asyncio.sleep(0)
        await applier.flush()

    asyncio.run(go())
    assert 1 <= len(sink.writes) <= 3
    assert b'"Pipe/p199"' in sink.writes[-1]


def test_an_urgent_record_is_stored_before_persist_returns_despite_the_pacing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(applier_module, "SAVE_INTERVAL", 60.0)
    sink = Sink()
    applier = _applier(sink)

    async def go() -> list[Any]:
        applier.state.record("Pipe/a", managed=["x"])
        await applier._persist(urgent=False)
        await asyncio.sleep(0.05)  # the first write happens at once; the next one is paced
        applier.state.record("Dashboard/ops", id="d-1")
        await asyncio.wait_for(applier._persist(urgent=True), timeout=30)
        seen = list(sink.writes)
        await applier.flush()
        return seen

    seen = asyncio.run(go())
    assert any(b'"Dashboard/ops"' in w for w in seen)


def test_a_failed_write_reaches_the_urgent_waiter_and_flush() -> None:
    applier = _applier(Sink(fail=True))

    async def go() -> None:
        applier.state.record("Dashboard/ops", id="d-1")
        with pytest.raises(StateConflictError):
            await applier._persist(urgent=True)
        with pytest.raises(StateConflictError):
            await applier.flush()

    asyncio.run(go())
