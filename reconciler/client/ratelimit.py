"""The sliding-window rate limiter: at most N request starts per window of T seconds per key.

The service limits each key to N requests in any window of T seconds (10 per 10 s for the
management interface) and counts a request somewhere between its start here and its answer
here. A place therefore stays taken while its request is in flight and comes free one window
after its answer's status line (plus a few milliseconds for clock granularity): a server
counting a sliding window, a fixed window or a bucket never sees more than N, whatever the
network's jitter, and the opening burst of N still leaves at once. At the real limit this
keeps an apply within 2 % of the floor (``bench/plan_scale.py`` row P8).

It learns from the server. A 429 holds every caller for as long as the server says
(``Retry-After`` / ``X-RateLimit-Reset``, parsed by the caller), and means someone else uses
the key or the server counts differently: the number of places falls to what the server
admitted in the last window, by at least a quarter and at most a half, once per burst (the
429s of requests already in flight when it fell teach nothing new). Each window of answers
without a 429 gives back a quarter of the configured count, up to it, so another client's
one-off burst costs one window; a raise refused again says the lower limit is real, and the
next raise waits eight windows, then sixteen, up to 64.

Where another client has used part of the key's window, the server refuses the requests past
what is left, each in flight at once one more 429. So the first request after a 429, and the
last tenth (``TAIL``) of a burst (many places free at once, as at the start of a run), go one
at a time: the first refusal stops the rest before they are sent.

``halt`` ends every wait at once and refuses later ones with ``Interrupted``.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from reconciler.model.errors import Interrupted

__all__ = ["Rate"]


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
        """Tell whether the rate imposes no limit."""
        return self.count == 0

    def __str__(self) -> str:
        return "unlimited" if self.unlimited else f"{self.count}/{self.seconds:g}s"


class NotInTime(Exception):
    """No place came free before the caller's ``until`` (``SlidingWindowLimiter.slot``)."""


@dataclass
class Place:
    """One request's place in the window: when it started, and when its answer began."""

    started: float
    clock: Callable[[], float]
    answered: float | None = None

    def heard(self) -> None:
        """Note that the answer's status line has arrived (the first time only): the place's
        window runs from here, so reading a large body does not delay the next request."""
        if self.answered is None:
            self.answered = self.clock()


class SlidingWindowLimiter:
    """N request starts per window per key, honouring the server's waits and 429s."""

    # After an answer only the clocks' granularity is left to cover (the server's check is
    # "older than the window"; a millisecond of rounding either side is plenty at 5 ms).
    ANSWER_MARGIN = 0.005
    # The share of a burst sent one request at a time (module docstring).
    TAIL = 0.1

    def __init__(
        self,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.rate = rate
        self.limit = rate.count  # the places per window now (lowered by 429s)
        self._clock = clock
        self._sleep = sleep  # a test's fake sleep; None: asyncio's, woken by answers and halt
        self._answers: deque[float] = deque()  # when each given-back place's answer came
        self._in_flight = 0
        self._hold_until = 0.0
        self._admitted: deque[float] = deque()  # starts of requests answered without a 429
        self._last_change = float("-inf")
        self._last_cut = float("-inf")
        self._raised = False  # the last change was a raise (refused again: the limit is real)
        self._quiet_windows = 1  # windows without a 429 a raise waits for
        self._alone = False  # after a 429: the next request goes alone
        self._tail = max(1, int(rate.count * self.TAIL))
        self._bursting = False  # many places were free at once: the burst's tail goes alone
        self._halted: str | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self.refusals = 0
        self.cuts = 0
        self.raises = 0
        self.waited = 0.0

    def delay(self) -> float:
        """Return 0 when a place is free now, else the seconds until one may be (inf: when a
        request in flight is answered)."""
        now = self._clock()
        if self._hold_until > now:
            return self._hold_until - now
        if self._alone and self._in_flight:
            return float("inf")
        if self.rate.unlimited:
            return 0.0
        after_answer = self.rate.seconds + self.ANSWER_MARGIN
        while self._answers and self._answers[0] + after_answer <= now:
            self._answers.popleft()
        free = self.limit - len(self._answers) - self._in_flight
        if free > self._tail:
            self._bursting = True
        elif free <= 0:
            self._bursting = False
        if free > 0:
            tail = self._bursting and free <= self._tail
            return float("inf") if tail and self._in_flight else 0.0
        if self._answers:
            return self._answers[0] + after_answer - now
        return float("inf")

    @asynccontextmanager
    async def slot(self, until: Callable[[], float] | None = None) -> AsyncIterator[Place]:
        """Hold one place for a request, yielding it; the place is timed from the answer.

        ``until`` returns the latest clock time worth starting at: when no place is free by
        then, ``NotInTime`` is raised instead.
        """
        place = Place(await self._take(until), self._clock)
        try:
            yield place
        finally:
            self._in_flight -= 1
            self._answers.append(self._clock() if place.answered is None else place.answered)
            self._changed.set()

    async def _take(self, until: Callable[[], float] | None) -> float:
        async with self._lock:
            while True:
                if self._halted is not None:
                    raise Interrupted(self._halted)
                wait = self.delay()
                if wait <= 0:
                    break
                if until is not None:
                    now, latest = self._clock(), until()
                    if now >= latest:
                        raise NotInTime
                    wait = min(wait, latest - now)
                before = self._clock()
                await self._wait(wait)
                self.waited += self._clock() - before
            self._in_flight += 1
            return self._clock()

    async def _wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when an answer comes in or the limiter is halted."""
        if self._sleep is not None:
            await self._sleep(seconds if seconds != float("inf") else 0.0)
            return
        self._changed.clear()
        timeout = None if seconds == float("inf") else seconds
        with suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    def halt(self, reason: str) -> None:
        """End every wait for a place now, and refuse later ones: each raises ``Interrupted``."""
        self._halted = reason
        self._changed.set()

    def blocked_for(self) -> float:
        """Return how many seconds every caller is still held by the server's last wait."""
        return max(0.0, self._hold_until - self._clock())

    def admitted(self, started: float) -> None:
        """Record that a request started at ``started`` was answered without a 429; after a
        whole window without one since the last change, give back a quarter of the rate."""
        self._alone = False
        if self.rate.unlimited:
            return
        now = self._clock()
        self._admitted.append(started)
        while self._admitted and self._admitted[0] + self.rate.seconds <= now:
            self._admitted.popleft()
        if (
            self.limit < self.rate.count
            and started >= self._last_cut
            and now - self._last_change >= self.rate.seconds * self._quiet_windows
        ):
            self.limit = min(self.rate.count, self.limit + max(1, self.rate.count // 4))
            self._last_change = now
            self._raised = True
            self.raises += 1
            self._changed.set()

    def refused(self, wait: float, started: float) -> None:
        """Record a 429 for a request started at ``started``: hold every caller ``wait``
        seconds (what the server asked), send the next request alone, and lower the rate
        once per burst (module docstring)."""
        self.refusals += 1
        now = self._clock()
        self._hold_until = max(self._hold_until, now + max(0.0, wait))
        self._alone = True
        if self.rate.unlimited or self.limit <= 1 or started < self._last_cut:
            return
        admitted = sum(1 for t in self._admitted if t > now - self.rate.seconds)
        high, low = (self.limit * 3) // 4, self.limit // 2
        self.limit = max(1, min(high, max(low, admitted or high)))
        if self._raised:  # a raise was refused: the lower limit is real
            self._quiet_windows = min(64, max(8, self._quiet_windows * 2))
        self._raised = False
        self._last_cut = self._last_change = now
        self.cuts += 1
