"""The request budget (``reconciler.client.budget``): ``Rate.parse`` and the sliding-window
``RequestBudget`` driven by a fake monotonic clock (``time.monotonic`` and ``asyncio.sleep``
patched), so window arithmetic is checked exactly without waiting."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable

import pytest

from reconciler.client.budget import Rate, RequestBudget
from reconciler.model.errors import Interrupted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("10/10", Rate(10, 10.0), id="n-per-seconds"),
        pytest.param(" 100/60 ", Rate(100, 60.0), id="surrounding-space"),
        pytest.param("5", Rate(5, 1.0), id="bare-n-is-per-second"),
        pytest.param("3/0.5", Rate(3, 0.5), id="fractional-window"),
        pytest.param("none", Rate(0, 1.0), id="none-is-unlimited"),
        pytest.param("UNLIMITED", Rate(0, 1.0), id="unlimited-any-case"),
        pytest.param("off", Rate(0, 1.0), id="off-is-unlimited"),
        pytest.param("0", Rate(0, 1.0), id="zero-is-unlimited"),
    ],
)
def test_rate_parse_accepts_documented_forms(text: str, expected: Rate) -> None:
    assert Rate.parse(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("abc", id="word"),
        pytest.param("10/abc", id="bad-seconds"),
        pytest.param("-1/10", id="negative-count"),
        pytest.param("10/0", id="zero-window"),
        pytest.param("10/-5", id="negative-window"),
        pytest.param("1.5/10", id="fractional-count"),
        pytest.param("", id="empty"),
        pytest.param("10/nan", id="nan-window"),
        pytest.param("10/inf", id="infinite-window"),
    ],
)
def test_rate_parse_rejects_invalid_rates(text: str) -> None:
    with pytest.raises(ValueError, match="invalid rate"):
        Rate.parse(text)


def test_rate_reads_as_text() -> None:
    assert str(Rate(10, 10.0)) == "10/10s"
    assert str(Rate(0, 1.0)) == "unlimited"
    assert Rate(0, 1.0).unlimited
    assert not Rate(1, 1.0).unlimited


class FakeClock:
    """A monotonic clock that only moves when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        self.now += delay
        await asyncio.sleep(0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("reconciler.client.budget.time.monotonic", fake.monotonic)
    real_sleep = asyncio.sleep

    async def patched_sleep(delay: float, result: object = None) -> object:
        if delay == 0:
            await real_sleep(0)
            return result
        await fake.sleep(delay)
        return result

    monkeypatch.setattr("reconciler.client.budget.asyncio.sleep", patched_sleep)
    return fake


def start_times(budget: RequestBudget, clock: FakeClock, tasks: int) -> list[float]:
    """Run ``tasks`` concurrent acquisitions; return when each one started, relative to t0."""
    t0 = clock.now
    times: list[float] = []

    async def one() -> None:
        await budget.acquire()
        times.append(round(clock.now - t0, 6))

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(tasks)))

    asyncio.run(main())
    return sorted(times)


def test_budget_allows_the_opening_burst_without_waiting(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    assert start_times(budget, clock, 10) == [0.0] * 10
    assert clock.sleeps == []
    assert budget.waited == 0.0


def test_budget_holds_extra_requests_until_the_window_slides(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(3, 10.0))
    window = budget.window
    assert window == pytest.approx(10.2)  # 2 % margin (at least 0.05 s)
    times = start_times(budget, clock, 7)
    assert times == pytest.approx([0, 0, 0, window, window, window, 2 * window])
    assert budget.waited == pytest.approx(2 * window)


def test_budget_never_starts_more_than_n_in_any_window(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(4, 1.0))
    times = start_times(budget, clock, 25)
    for i, start in enumerate(times):
        in_window = [t for t in times[i:] if t < start + budget.window - 1e-9]
        assert len(in_window) <= 4


def test_budget_margin_is_at_least_50_ms() -> None:
    assert RequestBudget(Rate(1, 1.0)).window == pytest.approx(1.05)
    assert RequestBudget(Rate(100, 60.0)).window == pytest.approx(61.2)


def test_unlimited_budget_never_waits(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(0, 1.0))
    assert start_times(budget, clock, 50) == [0.0] * 50
    assert clock.sleeps == []


def test_penalize_blocks_everyone_until_reset_and_lowers_the_rate(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    budget.penalize(5.0)
    assert budget.penalties == 1
    assert budget.current_count == 7
    times = start_times(budget, clock, 8)
    assert times[:7] == pytest.approx([5.0] * 7)
    assert times[7] == pytest.approx(5.0 + budget.window)


def test_penalize_lowers_the_rate_by_a_quarter_never_below_one() -> None:
    budget = RequestBudget(Rate(10, 10.0))
    counts = []
    for _ in range(6):
        budget.penalize(0)
        counts.append(budget.current_count)
    assert counts == [7, 5, 3, 2, 1, 1]
    assert budget.penalties == 6


def test_penalize_blocks_an_unlimited_budget_too(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(0, 1.0))
    budget.penalize(2.5)
    assert start_times(budget, clock, 3) == pytest.approx([2.5] * 3)
    assert budget.current_count == 0


def test_budget_records_each_start_after_waiting(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(1, 1.0))
    acquire: Callable[[], Awaitable[float]] = budget.acquire

    async def main() -> list[float]:
        out = []
        for _ in range(3):
            await acquire()
            out.append(clock.now)
            clock.now += 0.5  # the request itself takes half a second
        return out

    starts = asyncio.run(main())
    assert [round(b - a, 6) for a, b in itertools.pairwise(starts)] == [1.05, 1.05]


def test_penalize_should_lower_the_rate_once_for_429s_of_one_burst(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    starts = start_times(budget, clock, 10)
    assert starts == pytest.approx([0.0] * 10)
    clock.now += 0.1
    for _ in range(5):  # five refusals of requests that were all in flight together
        budget.penalize(5.0, started=0.0)
    assert budget.penalties == 5
    assert budget.cuts == 1
    assert budget.current_count == 7


def test_penalize_should_lower_the_rate_again_for_a_request_started_after_the_cut(
    clock: FakeClock,
) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    budget.penalize(1.0, started=clock.now)
    clock.now += 2.0
    budget.penalize(1.0, started=clock.now - 0.5)
    assert budget.cuts == 2
    assert budget.current_count == 5


def test_penalize_should_fall_to_what_the_server_admitted_but_not_below_half(
    clock: FakeClock,
) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    for _ in range(5):
        budget.admitted(clock.now)
    clock.now += 0.2
    budget.penalize(5.0, started=clock.now - 0.1)
    assert budget.current_count == 5  # the server let five through: its limit, not 7
    other = RequestBudget(Rate(10, 10.0))
    other.admitted(clock.now)
    other.penalize(5.0, started=clock.now)
    assert other.current_count == 5  # one admission says little: never below half at once


def test_slot_keeps_a_place_taken_while_its_request_is_in_flight(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(1, 1.0))
    starts: list[float] = []

    async def request(rtt: float) -> None:
        async with budget.slot() as place:
            started = place.started
            starts.append(started - 1000.0)
            await asyncio.sleep(rtt)  # the fake clock moves: the answer comes rtt later

    async def main() -> None:
        await asyncio.gather(request(5.0), request(0.0))

    asyncio.run(main())
    # The second waits for the first answer (t=5), then one window and the answer margin.
    assert starts == pytest.approx([0.0, 5.0 + 1.0 + budget.ANSWER_MARGIN])


def test_a_place_is_timed_from_its_status_line_when_heard_not_from_the_end_of_its_body(
    clock: FakeClock,
) -> None:
    budget = RequestBudget(Rate(1, 1.0))
    starts: list[float] = []

    async def request(body_seconds: float) -> None:
        async with budget.slot() as place:
            starts.append(place.started - 1000.0)
            await asyncio.sleep(0.5)  # the status line comes in
            place.heard()
            await asyncio.sleep(body_seconds)  # a large body is read after it

    async def main() -> None:
        await asyncio.gather(request(0.3), request(0.0))

    asyncio.run(main())
    # The server counted the first request before it answered: its window ends at 1.5 s,
    # although its body was read until 0.8 s.
    assert starts == pytest.approx([0.0, 0.5 + 1.0 + budget.ANSWER_MARGIN])


def test_slot_frees_a_place_one_window_after_a_fast_answer_not_after_the_margin(
    clock: FakeClock,
) -> None:
    budget = RequestBudget(Rate(2, 1.0))
    starts: list[float] = []

    async def request() -> None:
        async with budget.slot() as place:
            started = place.started
            starts.append(round(started - 1000.0, 6))

    async def main() -> None:
        await asyncio.gather(*(request() for _ in range(6)))

    asyncio.run(main())
    step = 1.0 + budget.ANSWER_MARGIN
    assert step < budget.window  # cheaper than the start-anchored margin (1.05 s here)
    assert starts == pytest.approx([0, 0, step, step, 2 * step, 2 * step])


def test_slot_never_lets_a_sliding_window_server_see_more_than_n_whatever_the_jitter() -> None:
    """Real time: each request is counted at an unknown moment between its start and answer.

    Whatever that moment, a server window of T seconds holds at most N requests when, for each
    request j, at most N requests started no later than j were answered less than T before j
    started (any of them may have been counted as late as its answer).
    """
    rate = Rate(3, 0.25)
    budget = RequestBudget(rate)
    rng = random.Random(3)
    spans: list[tuple[float, float]] = []

    async def request(rtt: float) -> None:
        async with budget.slot() as place:
            started = place.started
            await asyncio.sleep(rtt)
        spans.append((started, time.monotonic()))

    async def main() -> None:
        await asyncio.gather(*(request(rng.choice([0.0, 0.01, 0.12, 0.3])) for _ in range(14)))

    asyncio.run(main())
    for s_j, _ in spans:
        possibly_counted = [1 for s_i, r_i in spans if s_i <= s_j and r_i > s_j - rate.seconds]
        assert len(possibly_counted) <= rate.count


def test_a_lowered_rate_climbs_back_by_a_quarter_per_window_without_429(
    clock: FakeClock,
) -> None:
    # Issue 26 item 2: one 429 used to lower the rate for the rest of the run.
    budget = RequestBudget(Rate(100, 1.0))
    budget.penalize(0.5, started=clock.now)
    assert budget.current_count == 75
    counts = []
    for _ in range(4):
        for _ in range(10):  # answers without a 429 all through the next window
            clock.now += 0.1
            budget.admitted(clock.now - 0.01)
        counts.append(budget.current_count)
    assert counts == [100, 100, 100, 100]
    assert budget.raises == 1


def test_a_rate_is_not_raised_before_a_whole_window_without_429(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(10, 10.0))
    budget.penalize(1.0, started=clock.now)
    clock.now += 9.0
    budget.admitted(clock.now - 0.1)
    assert budget.current_count == 7
    clock.now += 1.0
    budget.admitted(clock.now - 0.1)
    assert budget.current_count == 9  # 7 + a quarter of 10 (2)
    clock.now += 10.0
    budget.admitted(clock.now - 0.1)
    assert budget.current_count == 10  # never above the configured rate


def test_a_raise_refused_again_makes_the_next_raise_wait_eight_windows(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(100, 1.0))
    budget.penalize(0.0, started=clock.now)  # 75
    clock.now += 1.0
    budget.admitted(clock.now - 0.01)
    assert budget.current_count == 100
    clock.now += 0.1
    # The other client is still there (and the server let one through: down to half).
    budget.penalize(0.0, started=clock.now - 0.05)
    assert budget.current_count == 50
    clock.now += 1.0
    budget.admitted(clock.now - 0.01)
    assert budget.current_count == 50  # one clean window is no longer enough
    clock.now += 6.0
    budget.admitted(clock.now - 0.01)
    assert budget.current_count == 50  # nor seven: the limit looks real, probe rarely
    clock.now += 1.0
    budget.admitted(clock.now - 0.01)
    assert budget.current_count == 75


def test_answers_from_before_the_cut_do_not_raise_it(clock: FakeClock) -> None:
    budget = RequestBudget(Rate(100, 1.0))
    before = clock.now
    clock.now += 0.1
    budget.penalize(0.0, started=clock.now)
    clock.now += 2.0
    budget.admitted(before)  # a slow answer to a request sent before the 429
    assert budget.current_count == 75


def test_the_last_tenth_of_a_burst_goes_one_request_at_a_time(clock: FakeClock) -> None:
    # Another client's burst just before the run makes the server refuse the run's last
    # requests of its first window: sent together, each would be one more 429.
    budget = RequestBudget(Rate(20, 10.0))
    starts: list[float] = []
    answers = [asyncio.Event() for _ in range(22)]

    async def request(index: int) -> None:
        async with budget.slot() as place:
            started = place.started
            starts.append(round(started - 1000.0, 6))
            await answers[index].wait()

    async def settle() -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    async def main() -> None:
        tasks = [asyncio.create_task(request(i)) for i in range(22)]
        await settle()
        assert starts == [0.0] * 18  # the opening burst, less its tail of two
        clock.now += 0.1
        for event in answers[:18]:
            event.set()
        await settle()
        assert starts[18:] == [0.1]  # the tail: one request, alone on the wire
        clock.now += 0.1
        answers[18].set()
        await settle()
        assert starts[19] == 0.2  # (the fake clock then jumps to the next window)
        clock.now += 0.1
        for event in answers[19:]:
            event.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    # Later windows are not held back: places come free as the first answers age.
    assert starts[20:] == pytest.approx([10.1 + budget.ANSWER_MARGIN] * 2)


def test_places_a_raise_adds_go_one_at_a_time_until_a_window_confirms_them(
    clock: FakeClock,
) -> None:
    budget = RequestBudget(Rate(8, 1.0))
    budget.penalize(0.0, started=clock.now)
    assert budget.current_count == 6
    clock.now += 1.0
    budget.admitted(clock.now - 0.01)  # a clean window: raised back, on probation
    assert budget.current_count == 8
    clock.now += 1.1  # the window is empty again
    starts: list[float] = []
    answers = [asyncio.Event() for _ in range(8)]

    async def request(index: int) -> None:
        async with budget.slot() as place:
            started = place.started
            starts.append(round(started - clock.now, 6))
            await answers[index].wait()

    async def settle() -> None:
        for _ in range(50):
            await asyncio.sleep(0)

    async def main() -> None:
        tasks = [asyncio.create_task(request(i)) for i in range(8)]
        await settle()
        assert len(starts) == 6  # the level known to be admitted, at once
        for event in answers[:6]:
            event.set()
        await settle()
        assert len(starts) == 7  # the raise's places: one, alone on the wire
        answers[6].set()
        await settle()
        assert len(starts) == 8
        answers[7].set()
        await asyncio.gather(*tasks)

    asyncio.run(main())


def test_halt_ends_a_pending_wait_for_a_place_and_refuses_later_ones() -> None:
    # A stopped apply sends nothing more: its wait for the next place (here a 30 s window away)
    # ends at once instead of lasting the window out, as every later take does.
    budget = RequestBudget(Rate(1, 30.0))

    async def main() -> tuple[BaseException | None, BaseException | None]:
        await budget.acquire()
        waiting = asyncio.create_task(budget.acquire())
        await asyncio.sleep(0.05)  # the task now waits for the window to slide
        assert not waiting.done()
        budget.halt("SIGTERM")
        done, _ = await asyncio.wait({waiting}, timeout=10)  # well before the 30 s window
        assert done == {waiting}
        try:
            async with budget.slot():
                pass
        except Interrupted as later:
            return waiting.exception(), later
        return waiting.exception(), None

    pending, later = asyncio.run(main())
    assert isinstance(pending, Interrupted) and pending.reason == "SIGTERM"
    assert isinstance(later, Interrupted) and later.reason == "SIGTERM"
