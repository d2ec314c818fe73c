"""The request budget: how many requests may start, shared by every concurrent request.

The service limits each key to N requests in a window of T seconds (10 per 10 s for the
management interface). A token bucket that refills continuously lets a burst of N and then
one every T/N seconds, which a server counting a *sliding* window refuses; so the budget here
is the stricter form: at most N request starts in any window of T seconds (a sliding log),
with a small margin for the network's jitter. It therefore satisfies a server that counts
fixed windows, sliding windows or buckets alike, and still allows the opening burst that
makes small plans instant. When the server answers 429 anyway, ``penalize`` blocks every
caller until the server's reset time and lowers the budget; ``admitted`` raises it back.

How the learned rate moves (additive increase, multiplicative decrease, with probes that back
off): a 429 under our own budget means someone else uses the key (or the server counts
differently), so the count falls to what the server admitted in the last window, by at least
a quarter and at most a half (one cut per burst: the 429s of requests already in flight when
it fell teach nothing new). Each later window of answers without a 429 raises it by a quarter
of the configured count, up to that count: a one-off burst by another client (a deploy
script, a colleague's plan) costs one window at three quarters instead of the rest of the
run (``bench/plan_scale.py`` scenario R, 1,000 writes at 100/1 with another client's 5
requests in the first second of writes, on a busy machine: 1.51x the floor with five 429s
before, 1.13x with one after). A raise that is refused again says the lower limit is real
(another client shares the key for good, or the server allows less than configured): the
next raise waits eight clean windows, then sixteen, and so on up to 64, so a real limit
costs a 429 now and then rather than every other window (scenario S: a server allowing half
the configured rate).

The last tenth (``TAIL``) of a burst - many places free at once, as at the start of a run
or after a pause - and the places a raise adds until a window has confirmed them, go one
request at a time: when another client has used part of the key's window, the server
refuses the requests past what is left, and refusals of requests in flight together would
each be one more 429. One at a time, the first refusal blocks the rest before they are
sent. Places that come free one by one (a busy run, as the answers of the window before
age) need no such care. It costs a few round trips per burst.

The client takes its places through ``slot()``, which also learns when each answer came back.
A request is counted by the server somewhere between its start here and its answer here, so
a place reused one window after the previous holder's *answer* can never be refused by a
sliding window, whatever the jitter, and it costs one round trip per window instead of the
fixed margin (2 %, at least 50 ms) that ``acquire`` alone must guess — a guess that a busy
machine's delays can exceed. A place whose request is still in flight stays taken.

``halt`` ends every wait for a place at once (a stopped apply sends nothing more, so waiting
out a window - 10 s at the service's rate - only delayed its exit): each waiting caller, and
each later one, gets ``Interrupted``.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from reconciler.model.errors import Interrupted


@dataclass(frozen=True)
class Rate:
    """``count`` requests per ``seconds``; ``count == 0`` means unlimited."""

    count: int
    seconds: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """Parse ``N/SECONDS`` (``10/10``), ``N`` (per second) or ``none``/``0`` (unlimited)."""
        raw = text.strip().lower()
        if raw in ("none", "0", "unlimited", "off"):
            return cls(0, 1.0)
        count_text, _, seconds_text = raw.partition("/")
        try:
            count = int(count_text)
            seconds = float(seconds_text) if seconds_text else 1.0
        except ValueError:
            raise ValueError(f"invalid rate {text!r}: expected N/SECONDS, e.g. 10/10") from None
        if count < 0 or not 0 < seconds < float("inf"):  # also refuses nan
            raise ValueError(f"invalid rate {text!r}: N must be >= 0 and SECONDS > 0")
        return cls(count, seconds)

    @property
    def unlimited(self) -> bool:
        """Tell whether the budget imposes no limit."""
        return self.count == 0

    def __str__(self) -> str:
        return "unlimited" if self.unlimited else f"{self.count}/{self.seconds:g}s"


class NotInTime(Exception):
    """No place came free before the caller's ``until`` (``RequestBudget.slot``)."""


@dataclass
class Place:
    """One request's place in the budget: when it started, and when its answer began."""

    started: float
    answered: float | None = None

    def heard(self) -> None:
        """Note that the answer's status line has arrived (the first time only).

        The server counted the request before it answered, so the place's window may run
        from here: a large body read after this point (a list of pipes) no longer delays
        the next request that reuses the place.
        """
        if self.answered is None:
            self.answered = time.monotonic()


class RequestBudget:
    """A sliding-window request budget shared by all tasks of one event loop."""

    # Jitter margin: a request's arrival at the server may lag its start here by a varying
    # amount; spacing the window a little wider keeps the server's count below its limit.
    MARGIN_FRACTION = 0.02
    MARGIN_MIN = 0.05
    # After an answer only the clocks' granularity is left to cover (the server's check is
    # "older than the window"; a millisecond of rounding either side is plenty at 5 ms).
    ANSWER_MARGIN = 0.005
    # The share of the opening window sent one request at a time (see the module docstring).
    TAIL = 0.1

    def __init__(self, rate: Rate) -> None:
        self.rate = rate
        self._count = rate.count
        self._starts: deque[float] = deque()
        self._answers: deque[float] = deque()  # answer times of slot() requests, in order
        self._in_flight = 0
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._halted: str | None = None  # why no place is given any more (``halt``)
        self._halt = asyncio.Event()
        self._blocked_until = 0.0
        self._last_cut = float("-inf")
        self._last_raise = float("-inf")
        self._probe_windows = 1  # clean windows a raise waits for (doubled by failed probes)
        self._admitted: deque[float] = deque()
        self._bursting = False  # many places came free at once: keep the burst's tail careful
        self._probe_from: int | None = None  # the count before an unconfirmed raise
        self._tail = max(1, int(rate.count * self.TAIL))
        self.penalties = 0
        self.cuts = 0
        self.raises = 0
        self.waited = 0.0

    @property
    def window(self) -> float:
        """Return the effective window in seconds, margin included."""
        seconds = self.rate.seconds
        return seconds + max(self.MARGIN_MIN, seconds * self.MARGIN_FRACTION)

    @property
    def current_count(self) -> int:
        """Return how many starts the budget currently allows per window."""
        return self._count

    async def acquire(self) -> float:
        """Wait until one more request may start, record its start and return its time.

        The place is freed one margin-widened window after this start; callers that can say
        when the answer came back use ``slot()`` instead, which frees it more exactly.
        """
        return await self._take(tracked=False)

    @asynccontextmanager
    async def slot(self, until: Callable[[], float] | None = None) -> AsyncIterator[Place]:
        """Hold one place for a request, yielding it; the place is timed from the answer.

        The answer is the moment the holder calls ``Place.heard`` (its status line came in),
        else the moment the place is given back. ``until`` returns the latest clock time worth
        starting at: when no place comes free by then, ``NotInTime`` is raised instead.
        """
        place = Place(await self._take(tracked=True, until=until))
        try:
            yield place
        finally:
            self._in_flight -= 1
            if not self.rate.unlimited:
                answered = place.answered
                self._answers.append(time.monotonic() if answered is None else answered)
            self._changed.set()

    def halt(self, reason: str) -> None:
        """End every wait for a place now, and refuse later ones: each raises ``Interrupted``."""
        self._halted = reason
        self._halt.set()

    def _check_halted(self) -> None:
        if self._halted is not None:
            raise Interrupted(self._halted)

    async def _take(self, *, tracked: bool, until: Callable[[], float] | None = None) -> float:
        if self.rate.unlimited and self._blocked_until == 0.0:
            if tracked:
                self._in_flight += 1
            return time.monotonic()
        async with self._lock:
            while True:
                self._check_halted()
                now = time.monotonic()
                delay = self._blocked_until - now
                if delay <= 0 and not self.rate.unlimited:
                    delay = self._next_free(now)
                if delay <= 0:
                    break
                if until is not None:
                    latest = until()
                    if now >= latest:
                        raise NotInTime
                    delay = min(delay, latest - now)
                before = time.monotonic()
                await self._wait(delay)
                self.waited += time.monotonic() - before
            started = time.monotonic()
            if tracked:
                self._in_flight += 1
            elif not self.rate.unlimited:
                self._starts.append(started)
            return started

    def _next_free(self, now: float) -> float:
        """Return 0 when a place is free now, else how long until one may be (inf: an answer)."""
        # Same expressions as the delays below, so that float rounding can never keep an
        # expired entry while computing a zero delay for it.
        after_answer = self.rate.seconds + self.ANSWER_MARGIN
        while self._starts and self._starts[0] + self.window <= now:
            self._starts.popleft()
        while self._answers and self._answers[0] + after_answer <= now:
            self._answers.popleft()
        used = len(self._starts) + len(self._answers) + self._in_flight
        free = self._count - used
        if free > self._tail:
            self._bursting = True
        elif free <= 0:
            self._bursting = False
        if free > 0:
            careful = (self._bursting and free <= self._tail) or (
                self._probe_from is not None and used >= self._probe_from
            )
            if careful and self._in_flight:
                return float("inf")  # one at a time: after the answer in flight
            return 0.0
        waits = []
        if self._starts:
            waits.append(self._starts[0] + self.window - now)
        if self._answers:
            waits.append(self._answers[0] + after_answer - now)
        return min(waits) if waits else float("inf")

    async def _wait(self, delay: float) -> None:
        """Sleep ``delay`` seconds, or less when a request in flight is answered meanwhile or
        the budget is halted."""
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._halt.wait())}
        if self._in_flight:
            self._changed.clear()
            waits.add(asyncio.ensure_future(self._changed.wait()))
        if delay != float("inf"):
            waits.add(asyncio.ensure_future(asyncio.sleep(delay)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()

    def blocked_for(self) -> float:
        """Return how many seconds every caller is still held by the last 429."""
        return max(0.0, self._blocked_until - time.monotonic())

    def admitted(self, started: float) -> None:
        """Record that a request started at ``started`` was answered without a 429; after
        enough such windows since the last change, raise a lowered rate (module docstring)."""
        if self.rate.unlimited:
            return
        self._admitted.append(started)
        while self._admitted and self._admitted[0] + self.rate.seconds <= started:
            self._admitted.popleft()
        now = time.monotonic()
        if self._probe_from is not None and now - self._last_raise >= self.rate.seconds:
            self._probe_from = None  # a whole window at the raised rate without a 429
        if self._count >= self.rate.count:
            return
        quiet = self.rate.seconds * self._probe_windows
        if started >= self._last_cut and now - max(self._last_cut, self._last_raise) >= quiet:
            self._probe_from = self._count
            self._count = min(self.rate.count, self._count + max(1, self.rate.count // 4))
            self._last_raise = now
            self.raises += 1
            self._changed.set()  # callers waiting for a place may start now

    def penalize(self, reset_seconds: float, started: float | None = None) -> None:
        """Block every caller for ``reset_seconds`` and lower the rate (``admitted`` raises it
        again after windows without a 429).

        ``started`` is when the refused request started: 429s for requests that were already
        in flight when the rate was last lowered belong to the same burst and lower it no
        further (five answers to one burst are one lesson, not five).
        """
        self.penalties += 1
        now = time.monotonic()
        self._blocked_until = max(self._blocked_until, now + max(0.0, reset_seconds))
        if self.rate.unlimited or self._count <= 1:
            return
        if started is not None and started < self._last_cut:
            return
        # A 429 under our own budget means another client shares the key or the server counts
        # differently: the requests it admitted in the last window are the best estimate of
        # its limit; give up at least a quarter and at most half of our share, never below one.
        horizon = now - self.rate.seconds
        admitted = sum(1 for t in self._admitted if t > horizon)
        high, low = (self._count * 3) // 4, self._count // 2
        estimate = admitted if admitted else high
        self._count = max(1, min(high, max(low, estimate)))
        if self._last_raise > self._last_cut:  # a raise was refused: the limit is real
            self._probe_windows = min(64, max(8, self._probe_windows * 2))
        self._last_cut = now
        self._probe_from = None
        self.cuts += 1
