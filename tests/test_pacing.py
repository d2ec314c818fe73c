"""Pacing: request starts are spread over a round trip only while a backlog waits.

The pacer's clock and sleep are replaced by a fake clock, so the tests check the schedule it
keeps (which start waits how long), never a wall-clock time.
"""

from __future__ import annotations

import asyncio

import pytest

from reconciler.client.pacing import Pacer


class FakeClock:
    """A monotonic clock that only moves when the pacer sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.starts: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def paced(parallelism: int, clock: FakeClock) -> Pacer:
    """A pacer on the fake clock."""
    return Pacer(parallelism, clock=clock.monotonic, sleep=clock.sleep)


def starts(pacer: Pacer, clock: FakeClock, count: int) -> list[float]:
    """Take ``count`` turns one after another; return when each start was allowed."""

    async def run() -> list[float]:
        out = []
        for _ in range(count):
            await pacer.turn()
            out.append(round(clock.now - 100.0, 6))
        return out

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("parallelism", "round_trips", "waiting", "expected"),
    [
        (16, [0.05], 100, [0.0, 0.003125, 0.00625, 0.009375]),  # 50 ms ÷ 16 apart
        (16, [0.2, 0.05, 0.9], 100, [0.0, 0.003125, 0.00625, 0.009375]),  # the shortest counts
        (16, [0.05], 0, [0.0, 0.0, 0.0, 0.0]),  # no backlog: all at once
        (16, [], 100, [0.0, 0.0, 0.0, 0.0]),  # no round trip known yet
        (1, [0.05], 100, [0.0, 0.0, 0.0, 0.0]),  # one at a time needs no spacing
        (16, [0.016], 100, [0.0, 0.0, 0.0, 0.0]),  # a 1 ms gap: below the timer's grain
    ],
)
def test_starts_should_be_spaced_by_the_shortest_round_trip_over_the_parallelism(
    clock: FakeClock,
    parallelism: int,
    round_trips: list[float],
    waiting: int,
    expected: list[float],
) -> None:
    pacer = paced(parallelism, clock)
    for seconds in round_trips:
        pacer.observe(seconds)
    pacer.waiting = waiting
    assert starts(pacer, clock, 4) == expected


def test_only_recent_round_trips_should_set_the_spacing(clock: FakeClock) -> None:
    pacer = paced(10, clock)
    pacer.observe(0.02)  # an early fast answer, then a server that got slower
    for _ in range(Pacer.RECENT):
        pacer.observe(0.1)
    assert pacer.spacing() == pytest.approx(0.01)


def test_a_start_after_a_pause_should_not_wait_for_the_old_schedule(clock: FakeClock) -> None:
    pacer = paced(16, clock)
    pacer.observe(0.05)
    pacer.waiting = 100
    assert starts(pacer, clock, 2) == [0.0, 0.003125]
    clock.now += 5.0  # nothing started for a while
    assert starts(pacer, clock, 2) == [5.003125, 5.00625]


def test_the_client_should_learn_round_trips_and_pace_its_backlog() -> None:
    from tests.support.asgi import emulator_app, in_process
    from tests.support.seed_ids import ORG_ID

    async def scenario() -> tuple[float, int]:
        async with in_process(emulator_app(latency_ms=40), parallelism=2) as (client, _):
            waited: list[float] = []
            real_sleep = client._pacer._sleep

            async def recording(seconds: float) -> None:
                waited.append(seconds)
                await real_sleep(seconds)

            client._pacer._sleep = recording
            path = f"/v1/organizations/{ORG_ID}/services"
            await asyncio.gather(*(client.get(path) for _ in range(8)))
            return client._pacer.spacing(), len(waited)

    spacing, paced_starts = asyncio.run(scenario())
    assert spacing >= 0.02  # at least 40 ms ÷ 2
    assert paced_starts > 0  # some of the 6 queued starts waited their turn
