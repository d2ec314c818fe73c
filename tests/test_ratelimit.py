"""``SlidingWindowLimiter`` (N request starts per window per key) and ``Rate``, on a fake clock.

Each case is a schedule: requests that start when the limiter lets them, each answered a given
time after its start; the test reads when each one started. The limiter's clock and sleep are
the fake clock's, so the tests check the schedule it keeps, never a wall-clock time.
"""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from reconciler.client.ratelimit import NotInTime, Rate, SlidingWindowLimiter
from reconciler.model.errors import Interrupted

MARGIN = SlidingWindowLimiter.ANSWER_MARGIN


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10/10", Rate(10, 10.0)),
        ("100/60", Rate(100, 60.0)),
        ("5", Rate(5, 1.0)),
        ("2/0.5", Rate(2, 0.5)),
        ("none", Rate(0, 1.0)),
        ("0", Rate(0, 1.0)),
        (" Unlimited ", Rate(0, 1.0)),
    ],
)
def test_rate_parse_accepts_documented_forms(text: str, expected: Rate) -> None:
    assert Rate.parse(text) == expected


@pytest.mark.parametrize("text", ["ten", "10/x", "-1/10", "10/0", "10/-5", "10/nan", "10/inf"])
def test_rate_parse_rejects_invalid_rates(text: str) -> None:
    with pytest.raises(ValueError, match="invalid rate"):
        Rate.parse(text)


@pytest.mark.parametrize(
    ("rate", "text"), [(Rate(10, 10.0), "10/10s"), (Rate(0, 1.0), "unlimited")]
)
def test_rate_reads_as_text(rate: Rate, text: str) -> None:
    assert str(rate) == text


class FakeClock:
    """A monotonic clock that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.now += delay
        await asyncio.sleep(0)


def limiter(rate: Rate, clock: FakeClock) -> SlidingWindowLimiter:
    return SlidingWindowLimiter(rate, clock=clock, sleep=clock.sleep)


async def request(
    limit: SlidingWindowLimiter, clock: FakeClock, rtt: float, starts: list[float]
) -> None:
    """One request: take a place, note its start, be answered ``rtt`` later."""
    async with limit.slot() as place:
        starts.append(round(place.started - 1000.0, 6))
        if rtt:
            await clock.sleep(rtt)
        place.heard()
    limit.admitted(place.started)


def schedule(limit: SlidingWindowLimiter, clock: FakeClock, rtts: list[float]) -> list[float]:
    """Run one request per round trip in ``rtts``, in order; return their starts (t0 = 0)."""
    starts: list[float] = []

    async def main() -> None:
        for rtt in rtts:
            await request(limit, clock, rtt, starts)

    asyncio.run(main())
    return starts


W = 10.0 + MARGIN  # a place comes free one window after its answer


@pytest.mark.parametrize(
    ("rate", "rtts", "expected"),
    [
        # The opening burst of N leaves at once; the next waits a window after the 1st answer.
        (Rate(3, 10.0), [0.0] * 4, [0.0, 0.0, 0.0, W]),
        (Rate(3, 10.0), [0.0] * 7, [0.0, 0.0, 0.0, W, W, W, 2 * W]),
        # A slow answer holds its place: the window runs from the answer, not the start.
        (Rate(1, 10.0), [2.0, 0.0], [0.0, 2.0 + W]),
        (Rate(2, 10.0), [1.0, 1.0, 0.0], [0.0, 1.0, 1.0 + W]),
        # Unlimited never waits.
        (Rate(0, 1.0), [0.0] * 50, [0.0] * 50),
    ],
    ids=["burst-then-wait", "windows", "slow-answer", "two-places", "unlimited"],
)
def test_starts_follow_the_sliding_window_of_the_answers(
    rate: Rate, rtts: list[float], expected: list[float]
) -> None:
    clock = FakeClock()
    assert schedule(limiter(rate, clock), clock, rtts) == pytest.approx(expected)


def test_a_place_stays_taken_while_its_request_is_in_flight() -> None:
    clock = FakeClock()
    limit = limiter(Rate(1, 10.0), clock)

    async def main() -> None:
        async with limit.slot() as first:
            assert limit.delay() == float("inf")  # free only once the answer is in
            first.heard()
        assert limit.delay() == pytest.approx(W)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("limit_now", "admitted", "expected"),
    [
        (10, 0, 7),  # nothing admitted to go by: a quarter off
        (10, 8, 7),  # at least a quarter off
        (10, 6, 6),  # what the server admitted in the last window
        (10, 2, 5),  # at most half off
        (1, 0, 1),  # never below one
    ],
)
def test_a_429_lowers_the_rate_to_what_the_server_admitted_within_bounds(
    limit_now: int, admitted: int, expected: int
) -> None:
    clock = FakeClock()
    limit = limiter(Rate(limit_now, 10.0), clock)
    for _ in range(admitted):
        limit.admitted(clock.now)
    limit.refused(3.0, clock.now)
    assert limit.limit == expected
    assert limit.blocked_for() == pytest.approx(3.0)


def test_the_429s_of_one_burst_lower_the_rate_once() -> None:
    clock = FakeClock()
    limit = limiter(Rate(10, 10.0), clock)
    burst = clock.now
    clock.now += 0.5
    for _ in range(5):
        limit.refused(1.0, burst)
    assert (limit.limit, limit.cuts, limit.refusals) == (7, 1, 5)
    clock.now += 1.0
    limit.refused(1.0, clock.now)  # a request started after the cut: a new lesson
    assert (limit.limit, limit.cuts) == (5, 2)


def test_a_429_holds_every_caller_for_the_server_s_wait_and_the_next_goes_alone() -> None:
    clock = FakeClock()
    limit = limiter(Rate(10, 10.0), clock)
    limit.refused(4.0, clock.now)
    starts: list[float] = []

    async def main() -> None:
        await asyncio.gather(*(request(limit, clock, 0.5, starts) for _ in range(3)))

    asyncio.run(main())
    # Nothing before the server's 4 s; the first goes alone, the next only after its answer
    # (the fake clock then runs the answered requests' round trips one after another).
    assert starts[:2] == pytest.approx([4.0, 4.5])
    assert limit.delay() == 0.0  # an admitted answer ends going alone


@pytest.mark.parametrize(
    ("windows", "expected"),
    [(0.5, 7), (1.0, 9), (2.0, 10), (3.0, 10)],
)
def test_a_lowered_rate_climbs_back_by_a_quarter_per_window_without_429(
    windows: float, expected: int
) -> None:
    clock = FakeClock()
    limit = limiter(Rate(10, 10.0), clock)
    limit.refused(0.0, clock.now)
    assert limit.limit == 7
    clean_windows(limit, clock, windows)
    assert limit.limit == expected


def clean_windows(limit: SlidingWindowLimiter, clock: FakeClock, windows: float) -> None:
    """Answers without a 429 every half second for ``windows`` windows of 10 s."""
    end = clock.now + windows * 10.0
    while clock.now < end - 1e-9:
        clock.now += 0.5
        limit.admitted(clock.now)


@pytest.mark.parametrize(
    ("after_the_refused_raise", "expected"),
    [(1.0, 4), (7.0, 4), (8.0, 6), (24.0, 10)],
)
def test_a_raise_refused_again_makes_the_next_raise_wait_eight_windows(
    after_the_refused_raise: float, expected: int
) -> None:
    clock = FakeClock()
    limit = limiter(Rate(10, 10.0), clock)
    limit.refused(0.0, clock.now)  # 10 -> 7
    clean_windows(limit, clock, 1.0)  # 7 -> 9: a raise
    assert limit.limit == 9
    clock.now += 0.5
    burst = clock.now - 0.2
    limit.refused(0.0, burst)  # the raise refused: 9 -> 6, and the limit is real
    limit.refused(0.0, burst)  # (one burst: once)
    clock.now += 0.5
    limit.refused(0.0, clock.now)  # refused again: 6 -> 4, still eight windows
    assert limit.limit == 4
    clean_windows(limit, clock, after_the_refused_raise)
    assert limit.limit == expected


def test_the_last_tenth_of_a_burst_goes_one_request_at_a_time() -> None:
    limit = SlidingWindowLimiter(Rate(20, 60.0))
    events: list[str] = []

    async def one() -> None:
        async with limit.slot():
            events.append("start")
            await asyncio.sleep(0.01)
            events.append("answer")

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(20)))

    asyncio.run(main())
    # 18 leave together; the last two (a tenth of 20) each go alone, nothing else in flight.
    assert events == ["start"] * 18 + ["answer"] * 18 + ["start", "answer"] * 2


def test_answers_to_requests_started_before_the_cut_do_not_raise_it() -> None:
    clock = FakeClock()
    limit = limiter(Rate(10, 10.0), clock)
    early = clock.now
    clock.now += 1.0
    limit.refused(0.0, clock.now)
    clock.now += 20.0
    limit.admitted(early)
    assert limit.limit == 7


def test_until_ends_a_wait_that_would_pass_it() -> None:
    clock = FakeClock()
    limit = limiter(Rate(1, 10.0), clock)

    async def main() -> None:
        async with limit.slot() as place:
            place.heard()
        with pytest.raises(NotInTime):
            async with limit.slot(until=lambda: 1005.0):
                pass

    asyncio.run(main())
    assert clock.now == pytest.approx(1005.0)


def test_halt_ends_a_pending_wait_for_a_place_and_refuses_later_ones() -> None:
    limit = SlidingWindowLimiter(Rate(1, 60.0))

    async def main() -> None:
        async with limit.slot():
            pass
        waiting = asyncio.create_task(limit.slot().__aenter__())
        await asyncio.sleep(0.01)
        started = time.monotonic()
        limit.halt("stopped by SIGTERM")
        with pytest.raises(Interrupted):
            await waiting
        assert time.monotonic() - started < 1.0
        with pytest.raises(Interrupted):
            async with limit.slot():
                pass

    asyncio.run(main())


def test_a_sliding_window_server_never_sees_more_than_n_whatever_the_jitter() -> None:
    """Real time: each request is counted at an unknown moment between its start and answer.

    Whatever that moment, a server window of T seconds holds at most N requests when, for each
    request j, at most N requests started no later than j were answered less than T before j
    started (any of them may have been counted as late as its answer).
    """
    rate = Rate(3, 0.25)
    limit = SlidingWindowLimiter(rate)
    rng = random.Random(3)
    spans: list[tuple[float, float]] = []

    async def one(rtt: float) -> None:
        async with limit.slot() as place:
            await asyncio.sleep(rtt)
        spans.append((place.started, time.monotonic()))

    async def main() -> None:
        await asyncio.gather(*(one(rng.choice([0.0, 0.01, 0.12, 0.3])) for _ in range(14)))

    asyncio.run(main())
    for s_j, _ in spans:
        possibly_counted = [1 for s_i, r_i in spans if s_i <= s_j and r_i > s_j - rate.seconds]
        assert len(possibly_counted) <= rate.count
