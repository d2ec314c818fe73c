"""Pacing: while requests queue for a connection, their starts are spread over a round trip.

With ``--parallelism 16`` and a backlog of reads, the first 16 requests leave together, their
answers come back together and are handled one after another here (and often there), and
the next 16 leave together again: the waves persist, and every round trip pays for handling
a whole wave (measured at 1,000 pipes and 50 ms: cycles of ~57 ms instead of ~51). Spacing
the starts by the shortest recent round trip divided by the parallelism breaks the waves and
never lowers throughput: 16 requests per shortest round trip is at least what 16 connections
can carry. Nothing is paced without a backlog (a plan of a few pipes sends them at once),
before a first answer has given a round trip to go by, or when the gap would be under 2 ms.
Measured (``bench/plan_scale.py`` scenario 3, paced and unpaced alternated six times): the
fetch phase's median fell from 3.59 to 3.51 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["Pacer"]


class Pacer:
    """The concurrency slots, whose starts are spaced by (shortest recent round trip ÷
    parallelism) while others wait for one."""

    # Round trips remembered: the shortest of them sets the spacing, so one slow answer
    # never widens it, and a faster server narrows it at once.
    RECENT = 32
    # Below this gap pacing is left off: waves of answers that close together cost little,
    # and the event loop's timers (1 ms granularity) would stretch every gap to a millisecond.
    MIN_GAP = 0.002

    def __init__(
        self,
        parallelism: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.parallelism = max(1, parallelism)
        self._clock = clock
        self._sleep = sleep
        self.waiting = 0  # calls queued for a concurrency slot
        self._slots = asyncio.Semaphore(self.parallelism)
        self._round_trips: deque[float] = deque(maxlen=self.RECENT)
        self._next = 0.0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``parallelism`` concurrency slots, starting when this start is due."""
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        try:
            await self.turn()
            yield
        finally:
            self._slots.release()

    def observe(self, seconds: float) -> None:
        """Record the round trip of an answered request."""
        self._round_trips.append(seconds)

    def spacing(self) -> float:
        """Return the gap kept between starts while a backlog waits (0: none)."""
        if self.parallelism == 1 or not self._round_trips:
            return 0.0
        gap = min(self._round_trips) / self.parallelism
        return gap if gap >= self.MIN_GAP else 0.0

    async def turn(self) -> None:
        """Wait until this start is due; at once when nothing queues behind it."""
        gap = self.spacing()
        if gap <= 0.0 or self.waiting == 0:
            return
        now = self._clock()
        due = max(now, self._next)
        self._next = due + gap
        if due > now:
            await self._sleep(due - now)
