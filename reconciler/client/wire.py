"""One attempt of a request on the wire, and the counters of what was sent.

``Wire`` holds what every attempt shares: both interfaces' httpx connection pools (a test
passes its own transport, such as ``httpx.ASGITransport``), the set of tasks whose request is
on the wire now, and the halt that stops new attempts. ``Wire.send`` makes one attempt: a
place in the interface's ``SlidingWindowLimiter``, the run's ``Health`` checked just before
sending, then the exchange, bounded by ``RequestLimits`` (a deadline covering the whole body,
a size cap) and read whole by ``read_response``. It sorts the answer: a 429, a 502/503/504, a
timeout or a broken connection is a ``Retryable`` for the retry loop of
``reconciler.client.api``; a redirect or an over-large body is its ``ApiError`` at once;
anything else is the response, for ``reconciler.client.responses`` to read. ``ClientStats``
counts the attempts that reached the server and the 429s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from reconciler.client.config import DASHBOARDS, MANAGEMENT, ApiConfig, tls_context
from reconciler.client.health import Health, answer_text
from reconciler.client.limits import (
    BodyTooLarge,
    RequestLimits,
    format_size,
    read_capped,
    redirect_target,
)
from reconciler.client.ratelimit import NotInTime, SlidingWindowLimiter
from reconciler.client.responses import parse_error, transport_error
from reconciler.client.retry import Attempts, Retryable, server_pause
from reconciler.model.apierrors import DeadlineExceeded, RedirectRefused, ResponseTooLarge
from reconciler.model.errors import Interrupted

__all__ = ["ClientStats"]


@dataclass
class ClientStats:
    """Counters of what the client sent.

    ``requests``: attempts sent, by interface (an attempt whose connection was never made, or
    never found in the pool, sent nothing and is not counted).
    """

    requests: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})
    throttled: int = 0
    throttled_by: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})


class Wire:
    """The client's two connection pools, and the one attempt of a request sent on them."""

    def __init__(
        self,
        config: ApiConfig,
        transport: httpx.AsyncBaseTransport | None,
        limiters: dict[str, SlidingWindowLimiter],
        health: Health,
        stats: ClientStats,
    ) -> None:
        self.config = config
        self.limiters = limiters
        self.health = health
        self.stats = stats
        # Set by ``halt``: no request starts any more (one already on the wire is not touched).
        self.halted: str | None = None
        # The tasks whose request is on the wire now (so an abort can tell sent from not sent).
        self.sending: set[asyncio.Task[object]] = set()
        limits = httpx.Limits(
            max_connections=max(1, config.parallelism),
            max_keepalive_connections=max(1, config.parallelism),
        )
        common: dict[str, Any] = {
            "limits": limits,
            "timeout": httpx.Timeout(config.timeout),
            "transport": transport,
            "verify": tls_context(config),
        }
        self._http = {
            MANAGEMENT: httpx.AsyncClient(
                base_url=config.base_url.rstrip("/"),
                auth=httpx.BasicAuth(config.key_id, config.key_secret),
                headers={"Accept": "application/json", "User-Agent": "reconcile"},
                **common,
            ),
            DASHBOARDS: httpx.AsyncClient(
                base_url=config.dashboards_url.rstrip("/"),
                headers={
                    "Authorization": f"Bearer {config.dashboards_token}",
                    "Accept": "application/json",
                    "User-Agent": "reconcile",
                },
                **common,
            ),
        }

    async def aclose(self) -> None:
        """Close both connection pools."""
        for client in self._http.values():
            await client.aclose()

    def halt(self, reason: str) -> None:
        """Start no new attempt from now on, also none waiting for a place in the rate limit."""
        self.halted = reason
        for limiter in self.limiters.values():
            limiter.halt(reason)

    def check_halted(self) -> None:
        """Raise ``Interrupted`` once ``halt`` was called."""
        if self.halted is not None:
            raise Interrupted(self.halted)

    async def send(
        self, interface: str, method: str, path: str, payload: str | None, attempts: Attempts
    ) -> httpx.Response:
        """Make one attempt and sort its answer: the response, a ``Retryable`` or an ``ApiError``."""
        headers = {"Content-Type": "application/json"} if payload is not None else None
        limiter = self.limiters[interface]
        health = self.health
        # The place is held until the answer (or the failure) is in: see ``limiter.slot``.
        # No start is waited for past the moment the interface would be given up.
        try:
            async with limiter.slot(until=lambda: health.give_up_at(interface)) as place:
                self.check_halted()
                health.check(interface)
                attempts.begin()
                self.stats.requests[interface] += 1
                task = asyncio.current_task()
                if task is not None:
                    self.sending.add(task)
                try:
                    response = await self._exchange(
                        interface, method, path, payload, headers, attempts, place.heard
                    )
                finally:
                    self.sending.discard(task)
        except NotInTime:
            health.check(interface)
            raise health.give_up(interface) from None
        status = response.status_code
        refusal = parse_error(interface, response, method, path) if status in (401, 403) else None
        health.answered(interface, status, refusal, path)
        if status == 429:
            self.stats.throttled += 1
            self.stats.throttled_by[interface] += 1
            pause, why = server_pause(response, attempts)
            limiter.refused(pause, place.started)
            attempts.notes.append(f"HTTP 429 ({why})")
            attempts.turned_away = True
            refused = parse_error(interface, response, method, path)
            health.failure(interface, attempts.attempt_started, answer_text(refused, why))
            raise Retryable(refused)
        limiter.admitted(place.started)
        if 300 <= status < 400:
            raise RedirectRefused(
                status=status,
                message=f"redirect to {redirect_target(response)} refused: reconcile never "
                "follows redirects, so credentials go only to the configured URL (check it)",
                method=method,
                path=path,
            )
        if status in (502, 503, 504):
            attempts.notes.append(f"HTTP {status}")
            failure = parse_error(interface, response, method, path)
            health.failure(interface, attempts.attempt_started, answer_text(failure))
            if status == 503:
                attempts.turned_away = True
            else:
                attempts.maybe_delivered = True
            raise Retryable(failure, unknown_outcome=status != 503)
        health.success(interface)
        return response

    async def _exchange(
        self,
        interface: str,
        method: str,
        path: str,
        payload: str | None,
        headers: dict[str, str] | None,
        attempts: Attempts,
        heard: Callable[[], None],
    ) -> httpx.Response:
        """Send one attempt and read its whole body within the deadline and the size cap
        (``heard`` is called as soon as the status line is in); return the read response."""
        limits = self.config.limits
        deadline = max(0.001, min(limits.deadline, attempts.remaining()))
        http = self._http[interface]
        status: int | None = None
        try:
            async with asyncio.timeout(deadline):
                request = http.build_request(method, path, content=payload, headers=headers)
                response = await http.send(request, stream=True)
                heard()
                status = response.status_code
                try:
                    body = await read_capped(response, limits.max_response_bytes)
                finally:
                    await response.aclose()
        except TimeoutError:
            note = f"no complete answer within {deadline:.3g} s"
            attempts.notes.append(note)
            attempts.maybe_delivered = True
            shown = f"HTTP {status}, then {note}" if status is not None else note
            self.health.failure(interface, attempts.attempt_started, shown)
            late = DeadlineExceeded(
                status=status,
                message=f"{note} (the request deadline: {RequestLimits.option('deadline')})",
                method=method,
                path=path,
            )
            raise Retryable(late, unknown_outcome=True) from None
        except BodyTooLarge as exc:  # nothing more is read
            raise ResponseTooLarge(
                status=status,
                message=f"response body larger than the limit of "
                f"{format_size(limits.max_response_bytes)} ({exc}); not read further "
                f"({RequestLimits.option('max_response_bytes')})",
                method=method,
                path=path,
            ) from None
        except httpx.ConnectError as exc:
            # Never reached the server: not a request sent, and safe to resend anything.
            self.stats.requests[interface] -= 1
            self.health.unreachable(interface, exc)
            error = transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            self.health.failure(interface, attempts.attempt_started, error.message, refused=True)
            raise Retryable(error) from None
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            # A connection never made, or a free one never found, sent nothing: not a request
            # sent (``stats.requests`` counts only attempts that had a connection).
            unsent = isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
            if unsent:
                self.stats.requests[interface] -= 1
            self.health.unreachable(interface, exc)
            error = transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            if not unsent:
                attempts.maybe_delivered = True
            self.health.failure(interface, attempts.attempt_started, error.message)
            raise Retryable(error, unknown_outcome=True) from None
        return read_response(response, body)


def read_response(streamed: httpx.Response, body: bytes) -> httpx.Response:
    """Return ``streamed`` as a response whose ``body`` (already read and decoded under the
    cap) is its content, so ``json()`` and ``content`` work as usual."""
    headers = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() != "content-encoding"]
    return httpx.Response(
        streamed.status_code,
        headers=headers,
        content=body,
        request=streamed.request,
        extensions=streamed.extensions,
    )
