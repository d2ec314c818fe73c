"""The API client: the only module of reconcile that speaks HTTP, and its one request path.

It drives both interfaces of the service: management (``/v1``, HTTP Basic with a key id and
secret) and dashboards (``/api/v2``, Bearer token), each on httpx's own connection pool (a
test passes its own transport, such as ``httpx.ASGITransport``; proxies named by the
environment are used as httpx uses them). One request takes one concurrency slot
(``--parallelism``) and then passes four steps, each a class of its own:

1. a place in the interface's ``SlidingWindowLimiter`` (``reconciler.client.ratelimit``: N
   starts per window per key, holding every caller for as long as a 429 asks and learning a
   lower rate from it);
2. the run's ``Health`` (``reconciler.client.health``), checked once just before sending:
   refused credentials or a server never reached end the run, an interface whose retry budget
   is spent is given up;
3. the exchange, bounded by ``RequestLimits`` (``reconciler.client.limits``: a deadline
   covering the whole body, a size cap, redirects refused and said to be) and read into a
   payload or a typed ``ApiError`` by ``reconciler.client.responses``;
4. tenacity's retry loop around them (``reconciler.client.retry``: which failures are retried,
   backoff, the attempt limit and retry budget, and ``OutcomeUnknown`` for a write whose
   outcome is unknown, never resent blindly).

``ApiConfig`` (``reconciler.client.config``) says where and how to reach the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx
from tenacity import wait_exponential_jitter

from reconciler.client.config import (
    DASHBOARDS,
    MANAGEMENT,
    ApiConfig,
    tls_context,
)
from reconciler.client.health import Health, answer_text, credential_origins
from reconciler.client.limits import (
    BodyTooLarge,
    RequestLimits,
    format_size,
    read_capped,
    redirect_target,
)
from reconciler.client.ratelimit import NotInTime, SlidingWindowLimiter
from reconciler.client.responses import (
    RequestRecord,
    Undecoded,
    parse_error,
    transport_error,
    unwrap,
)
from reconciler.client.retry import (
    Attempts,
    OutcomeUnknown,
    Retryable,
    gave_up,
    retrying,
    server_pause,
)
from reconciler.model.apierrors import (
    ApiError,
    DeadlineExceeded,
    Delivery,
    InterfaceDown,
    MethodNotAllowed,
    NotFound,
    NotSent,
    RedirectRefused,
    ResponseTooLarge,
    Unsupported,
)
from reconciler.model.errors import Interrupted
from reconciler.model.json import JsonValue
from reconciler.model.secrets import SecretTree, reveal

__all__ = [
    "ApiConfig",
    "Client",
    "ClientStats",
    "OutcomeUnknown",
    "RequestRecord",
    "observe_clients",
]


@dataclass
class ClientStats:
    """Counters of what the client sent.

    ``requests``: attempts sent, by interface (an attempt whose connection was never made, or
    never found in the pool, sent nothing and is not counted).
    """

    requests: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})
    throttled: int = 0
    throttled_by: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})


# Lists that collect the stats of every Client created while they are observed (metrics).
_OBSERVERS: ContextVar[tuple[list[ClientStats], ...]] = ContextVar("client_stats", default=())


@contextlib.contextmanager
def observe_clients() -> Iterator[list[ClientStats]]:
    """Collect the ``ClientStats`` of every ``Client`` created inside the block."""
    sink: list[ClientStats] = []
    token = _OBSERVERS.set((*_OBSERVERS.get(), sink))
    try:
        yield sink
    finally:
        _OBSERVERS.reset(token)


class Client:
    """An async client for both interfaces; use as ``async with Client(config) as api``."""

    def __init__(
        self, config: ApiConfig, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self.stats = ClientStats()
        for sink in _OBSERVERS.get():
            sink.append(self.stats)
        self.limiters = {
            MANAGEMENT: SlidingWindowLimiter(config.rate),
            DASHBOARDS: SlidingWindowLimiter(config.dashboards_rate),
        }
        self._slots = asyncio.Semaphore(max(1, config.parallelism))
        self.health = Health(
            {
                MANAGEMENT: (config.base_url, config.origin("base_url")),
                DASHBOARDS: (config.dashboards_url, config.origin("dashboards_url")),
            },
            config.limits.retry_budget,
            credential_origins(config.origins),
        )
        # Set by ``halt``: no request starts any more (one already on the wire is not touched).
        self.halted: str | None = None
        # The tasks whose request is on the wire now (so an abort can tell sent from not sent).
        self.sending: set[asyncio.Task[Any]] = set()
        self._backoff = wait_exponential_jitter(multiplier=0.2, max=config.max_backoff, jitter=0.2)
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

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close both connection pools."""
        for client in self._http.values():
            await client.aclose()

    # -- public verbs ---------------------------------------------------------------------

    async def get(
        self, path: str, *, resource: str | None = None, optional: bool = False, decode: bool = True
    ) -> JsonValue | Undecoded:
        """GET a management path and return the envelope's ``result``.

        ``optional`` marks an endpoint the spec does not guarantee: a 404/405 then raises
        ``Unsupported`` so the caller can fall back. Without ``decode``, a successful answer
        is returned as ``Undecoded`` (its body still bytes, decoded when the caller is ready).
        """
        result, _ = await self.call(
            MANAGEMENT,
            "GET",
            path,
            resource=resource,
            idempotent=True,
            optional=optional,
            decode=decode,
        )
        return result

    async def dashboards(
        self,
        method: str,
        path: str,
        body: Mapping[str, SecretTree] | None = None,
        *,
        resource: str | None = None,
        idempotent: bool | None = None,
        optional: bool = False,
    ) -> JsonValue | Undecoded:
        """Call the dashboards interface and return the ``data`` member (``optional`` as in ``get``)."""
        safe = method in ("GET", "PUT", "DELETE") if idempotent is None else idempotent
        result, _ = await self.call(
            DASHBOARDS, method, path, body, resource=resource, idempotent=safe, optional=optional
        )
        return result

    # -- machinery -------------------------------------------------------------------------

    async def call(
        self,
        interface: str,
        method: str,
        path: str,
        body: Mapping[str, SecretTree] | None = None,
        *,
        resource: str | None = None,
        idempotent: bool,
        optional: bool = False,
        decode: bool = True,
    ) -> tuple[JsonValue | Undecoded, RequestRecord]:
        """Send one logical request (with retries); return the payload and its record.

        Raises an ``ApiError`` branch chosen by status (``NotFound``, ``RateLimited``, …);
        with ``optional``, a 404/405 is raised as ``Unsupported``.
        """
        # The concurrency slot is taken before any per-request work: a thousand queued reads
        # then wait here cheaply instead of each building its retry state up front.
        async with self._slots:
            self._check_halted()
            try:
                return await self._call(interface, method, path, body, resource, idempotent, decode)
            except (NotFound, MethodNotAllowed) as exc:
                raise (exc.as_type(Unsupported) if optional else exc) from None

    def halt(self, reason: str) -> None:
        """Start no new request (nor retry) from now on: each raises ``Interrupted`` instead,
        also one waiting for a place in the rate limit."""
        self.halted = reason
        for limiter in self.limiters.values():
            limiter.halt(reason)

    def _check_halted(self) -> None:
        if self.halted is not None:
            raise Interrupted(self.halted)

    async def _call(
        self,
        interface: str,
        method: str,
        path: str,
        body: Mapping[str, SecretTree] | None,
        resource: str | None,
        idempotent: bool,
        decode: bool = True,
    ) -> tuple[JsonValue | Undecoded, RequestRecord]:
        payload = None if body is None else json.dumps(reveal(body), separators=(",", ":"))
        attempts = Attempts(self.config.limits, self.config.max_attempts)
        limiter = self.limiters[interface]
        try:
            async for attempt in retrying(
                attempts,
                limiter,
                self._backoff,
                idempotent=idempotent,
                health=(self.health, interface),
            ):
                with attempt:
                    response = await self._once(interface, method, path, payload, attempts)
                    unwrapped: tuple[JsonValue | Undecoded, RequestRecord] = unwrap(
                        interface, response, method, path, attempts.count, decode=decode
                    )
                    return unwrapped
        except InterfaceDown as exc:  # given up before this attempt: say what became of it
            raise exc.with_delivery(attempts.delivery()) from None
        except Retryable as exc:
            down = self.health.down(interface)
            if down is not None:  # the interface was given up: the run's one error
                raise down.with_delivery(attempts.delivery()) from None
            error = gave_up(exc.error, attempts)
            if error.status is None and attempts.delivery() is Delivery.NOT_SENT:
                error = error.as_type(NotSent)  # refused connections only: nothing was sent
            error = error.with_resource(resource) if resource else error
            if exc.unknown_outcome and not idempotent:
                raise OutcomeUnknown(
                    status=error.status,
                    message=f"outcome unknown ({error.message}); not resent because it is not safe to repeat",
                    request_id=error.request_id,
                    code=error.code,
                    resource=error.resource,
                    method=method,
                    path=path,
                ) from None
            raise error from None
        except ApiError as exc:
            raise (exc.with_resource(resource) if resource else exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _once(
        self, interface: str, method: str, path: str, payload: str | None, attempts: Attempts
    ) -> httpx.Response:
        headers = {"Content-Type": "application/json"} if payload is not None else None
        limiter = self.limiters[interface]
        health = self.health
        # The place is held until the answer (or the failure) is in: see ``limiter.slot``.
        # No start is waited for past the moment the interface would be given up.
        try:
            async with limiter.slot(until=lambda: health.give_up_at(interface)) as place:
                self._check_halted()
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
