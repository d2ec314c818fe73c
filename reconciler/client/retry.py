"""The retry policy of one logical request: what may be retried, how long to wait, when to stop.

Reads are retried on 429, 502/503/504 and connection errors with capped exponential backoff
and jitter; writes only when resending cannot do harm, and otherwise an unknown outcome is
raised as ``OutcomeUnknown``. A 429's wait comes from the server's headers (parsed in
``reconciler.client.limits``), capped at ``max_wait``; every attempt and wait counts against
the retry budget and attempt limit (``Attempts``), and the final error says what was tried.
"""

from __future__ import annotations

import time

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential_jitter

from reconciler.client.health import Health
from reconciler.client.limits import RequestLimits, server_wait
from reconciler.client.ratelimit import SlidingWindowLimiter
from reconciler.model.apierrors import ApiError, Delivery, RateLimited

__all__ = ["OutcomeUnknown"]


class OutcomeUnknown(ApiError):
    """A non-idempotent write was sent but no answer came back: it may or may not have applied."""


class Retryable(Exception):
    """Internal: an attempt failed in a way that may be retried."""

    def __init__(self, error: ApiError, *, unknown_outcome: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.unknown_outcome = unknown_outcome


class Attempts:
    """The clock and history of one logical request, for its retry budget and final message."""

    def __init__(self, limits: RequestLimits, max_attempts: int) -> None:
        self.limits = limits
        self.max_attempts = max_attempts
        self.started: float | None = None
        self.count = 0
        self.notes: list[str] = []
        # When the latest attempt began (the run's failure clock starts there).
        self.attempt_started = 0.0
        # Whether an attempt may have been processed (no answer came), or was refused 429/503.
        self.maybe_delivered = False
        self.turned_away = False

    def begin(self) -> None:
        """Count an attempt; the budget's clock starts with the first."""
        self.count += 1
        self.attempt_started = time.monotonic()
        if self.started is None:
            self.started = self.attempt_started

    def delivery(self) -> Delivery:
        """Say what became of this request so far, should it end now."""
        if self.maybe_delivered:
            return Delivery.UNKNOWN
        return Delivery.REFUSED if self.turned_away else Delivery.NOT_SENT

    @property
    def elapsed(self) -> float:
        """Return the seconds since the first attempt started."""
        return 0.0 if self.started is None else time.monotonic() - self.started

    def remaining(self) -> float:
        """Return the seconds left of the retry budget."""
        return self.limits.retry_budget - self.elapsed

    def exhausted(self, upcoming_wait: float) -> bool:
        """Tell whether another attempt after ``upcoming_wait`` seconds is out of budget."""
        if self.count >= self.max_attempts:
            return True
        return self.elapsed + upcoming_wait >= self.limits.retry_budget

    def summary(self) -> str:
        """Return what was tried, e.g. ``gave up after 3 attempts in 4.2 s: HTTP 429, …``."""
        if self.count >= self.max_attempts:
            why = f"the limit of {self.max_attempts} attempts"
        else:
            why = (
                f"the retry budget of {self.limits.retry_budget:g} s"
                f" ({RequestLimits.option('retry_budget')})"
            )
        plural = "s" if self.count != 1 else ""
        return (
            f"gave up after {self.count} attempt{plural} in {self.elapsed:.1f} s ({why});"
            f" tried: {', '.join(self.notes)}"
        )


def gave_up(error: ApiError, attempts: Attempts) -> ApiError:
    """Return ``error`` (same type) with what was tried appended, when it was retried at all."""
    if attempts.count <= 1 and attempts.count < attempts.max_attempts:
        return error
    return type(error)(
        status=error.status,
        message=f"{error.message}; {attempts.summary()}",
        request_id=error.request_id,
        code=error.code,
        resource=error.resource,
        method=error.method,
        path=error.path,
    )


def server_pause(response: httpx.Response, attempts: Attempts) -> tuple[float, str]:
    """Return how long to hold every caller after a 429 (capped) and why, e.g.
    ``X-RateLimit-Reset 3 s`` (the note of the attempt is ``HTTP 429 (WHY)``)."""
    cap = attempts.limits.max_wait
    asked = server_wait(response.headers)
    if asked is None:
        # No usable header (absent, negative or garbage): back off exponentially instead.
        pause = min(cap, 2.0 ** (attempts.count - 1))
        return pause, f"no usable wait header; backing off {pause:g} s"
    seconds, header = asked
    if seconds > cap:
        option = RequestLimits.option("max_wait")
        return cap, f"{header} asked {seconds:.0f} s, capped at {cap:g} s: {option}"
    return seconds, f"{header} {seconds:.3g} s"


def retrying(
    attempts: Attempts,
    limiter: SlidingWindowLimiter,
    backoff: wait_exponential_jitter,
    *,
    idempotent: bool,
    health: tuple[Health, str] | None = None,
) -> AsyncRetrying:
    """Return the retry loop of one logical request (see the module docstring)."""

    def should_retry(exc: BaseException) -> bool:
        if not isinstance(exc, Retryable):
            return False
        return idempotent or not exc.unknown_outcome

    def wait(state: RetryCallState) -> float:
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, Retryable) and isinstance(exc.error, RateLimited):
            return 0.0  # the limiter holds every caller until the server's reset time
        return float(backoff(state))

    def stop(state: RetryCallState) -> bool:
        # The server's (capped) wait is held by the shared limiter: it counts here too.
        upcoming = state.upcoming_sleep + limiter.blocked_for()
        # The interface's bounds first: when they end too, the run's one message says so
        # (a request's own bounds end it alone while the interface answers others).
        if health is not None and health[0].exhausted(health[1], upcoming):
            return True
        return attempts.exhausted(upcoming)

    return AsyncRetrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception(should_retry),
        reraise=True,
    )
