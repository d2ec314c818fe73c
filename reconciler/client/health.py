"""Whole-run bounds per interface: when to stop sending to a server that does not answer.

Each request is bounded on its own (``reconciler.client.limits``), but requests that wait on
each other add up: against a server that answers every request 429, thirty requests that
each respect their own two minutes held a run for three. ``InterfaceHealth`` keeps one clock
per interface instead, and gives the interface up in two cases:

- **the run's retry budget is spent**: from the start of the first failed attempt after the
  interface's last success, ``retry_budget`` seconds (``--retry-budget``) have gone by in
  waits and retries. A failure is an attempt the client retries (a 429, 502/503/504, a
  transport error, a body not complete within the request deadline); a success is any other
  complete answer (a 404 is the server at work). A wait or a retry that would end past the
  budget is not started: the interface is given up at once. So a run against a server that
  never succeeds ends within the budget plus one request deadline (an attempt started just
  before the budget ran out may take that long).
- **connections are refused after the interface had answered**: nothing listens any more
  (a server that is overloaded or behind a proxy answers 502/503, or accepts and is slow;
  one that refuses has gone). A restarting process is back within seconds or not soon, so
  refusals are retried as usual for ``REFUSED_GRACE`` seconds, no more: the run then says
  what it sent and did not, and running it again finishes the job. (Before any answer, a
  refused connection already ends the run at once: ``reconciler.client.firstcontact``.)

Once given up, every further request to the interface fails at once with ``InterfaceDown``,
which names the server's last answer; the other interface carries on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from reconciler.client.limits import RequestLimits
from reconciler.model.errors import ApiError, InterfaceDown

__all__ = ["REFUSED_GRACE", "InterfaceHealth", "answer_text"]

# Seconds of refused connections (after a success) before the interface is given up.
REFUSED_GRACE = 5.0


class InterfaceHealth:
    """One interface's failure clock and, once given up, the error every request gets."""

    def __init__(
        self,
        interface: str,
        url: str,
        retry_budget: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interface = interface
        parts = urlsplit(url)  # named in messages: never a user:password@ or a query
        host = parts.netloc.rpartition("@")[2]
        self.url = f"{parts.scheme}://{host}{parts.path.rstrip('/')}"
        self.retry_budget = retry_budget
        self._clock = clock
        self.failing_since: float | None = None
        self.refused_since: float | None = None
        self.answered = False
        self.last_answer = ""
        self.down: InterfaceDown | None = None

    def check(self) -> None:
        """Raise ``InterfaceDown`` if the interface was given up (called before each attempt)."""
        if self.down is not None:
            raise self.down

    def success(self) -> None:
        """Record a complete answer that is not retried: the clocks start again."""
        self.answered = True
        self.failing_since = None
        self.refused_since = None

    def failure(self, started: float, answer: str, *, refused: bool = False) -> None:
        """Record an attempt begun at ``started`` that failed as ``answer`` says (and is retried).

        ``refused``: the connection was refused (nothing was sent).
        """
        self.last_answer = answer
        if self.failing_since is None or started < self.failing_since:
            self.failing_since = started
        if not refused:
            self.refused_since = None
        elif self.answered and self.refused_since is None:
            self.refused_since = self._clock()

    def give_up_at(self) -> float:
        """Return the clock time at which the interface is given up (inf: it is not failing)."""
        limit = float("inf")
        if self.failing_since is not None:
            limit = self.failing_since + self.retry_budget
        if self.refused_since is not None:
            limit = min(limit, self.refused_since + REFUSED_GRACE)
        return limit

    def exhausted(self, upcoming_wait: float) -> bool:
        """Tell whether a retry after ``upcoming_wait`` seconds would end past the bounds; if
        so, give the interface up."""
        if self.down is not None:
            return True
        if self._clock() + upcoming_wait < self.give_up_at():
            return False
        self.give_up(upcoming_wait)
        return True

    def give_up(self, upcoming_wait: float = 0.0) -> InterfaceDown:
        """Give the interface up (if not already) and return the error every request gets;
        ``upcoming_wait`` is the wait that would have passed the bounds."""
        if self.down is None:
            self.down = InterfaceDown(
                interface=self.interface,
                url=self.url,
                why=self._why(upcoming_wait),
                last_answer=self.last_answer or "none",
            )
        return self.down

    def _why(self, upcoming_wait: float) -> str:
        now = self._clock()
        budget_end = (
            float("inf") if self.failing_since is None else self.failing_since + self.retry_budget
        )
        if self.refused_since is not None and self.refused_since + REFUSED_GRACE <= budget_end:
            return (
                f"connections refused for {now - self.refused_since:.1f} s after it had "
                "answered (nothing listens there any more)"
            )
        spent = 0.0 if self.failing_since is None else now - self.failing_since
        since = "since its last success" if self.answered else "without a single success"
        more = f", and {upcoming_wait:.2g} s more would pass" if spent < self.retry_budget else ""
        return (
            f"{spent:.1f} s of waits and retries {since}{more}: the run's retry budget of "
            f"{self.retry_budget:g} s ({RequestLimits.option('retry_budget')})"
        )


def answer_text(error: ApiError, wait: str | None = None) -> str:
    """Describe a server's answer for ``InterfaceDown``: status, message, requestId and the
    wait it asked for (``wait``, as ``retry.server_pause`` says it)."""
    text = f"HTTP {error.status}"
    if error.message:
        text += f": {error.message}"
    if error.request_id:
        text += f" (requestId {error.request_id})"
    return f"{text} [{wait}]" if wait else text
