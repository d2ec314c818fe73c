"""The API client: the only module of reconcile that speaks HTTP, and its one request path.

It drives both interfaces of the service: management (``/v1``, HTTP Basic with a key id and
secret) and dashboards (``/api/v2``, Bearer token). Every request passes through a shared
``RequestBudget`` (the service's rate limit) and a concurrency cap, is retried as the retry
policy says (``reconciler.client.retry``: backoff, 429 waits, the retry budget, and
``OutcomeUnknown`` for a write whose outcome is unknown), stops at once on an interface the
run has given up (``reconciler.client.health``: the run's retry budget spent, or connections
refused after it had answered), is bounded by ``RequestLimits``
(``reconciler.client.limits``: a deadline covering the whole body, a size cap, redirects
refused and said to be), and is read into a payload or a typed ``ApiError`` by
``reconciler.client.responses``. ``ApiConfig`` (``reconciler.client.config``) says where and
how to reach the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx
from tenacity import wait_exponential_jitter

from reconciler.client.budget import NotInTime, RequestBudget
from reconciler.client.config import (
    DASHBOARDS,
    DASHBOARDS_RATE,
    MANAGEMENT,
    MANAGEMENT_RATE,
    ApiConfig,
    tls_context,
)
from reconciler.client.firstcontact import FirstContact, credential_origins
from reconciler.client.health import InterfaceHealth, answer_text
from reconciler.client.limits import (
    BodyTooLarge,
    RequestLimits,
    format_size,
    read_capped,
    redirect_target,
)
from reconciler.client.pacing import Pacer
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
from reconciler.client.transport import LeanTransport, basic_authorization, environment_proxies
from reconciler.model.errors import (
    ApiError,
    DeadlineExceeded,
    Delivery,
    InterfaceDown,
    Interrupted,
    MethodNotAllowed,
    NotFound,
    NotSent,
    RedirectRefused,
    ResponseTooLarge,
    Unsupported,
)
from reconciler.model.json import JsonValue
from reconciler.model.secrets import SecretTree, reveal

__all__ = [
    "DASHBOARDS",
    "DASHBOARDS_RATE",
    "MANAGEMENT",
    "MANAGEMENT_RATE",
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
        self.first_contact = FirstContact(
            {MANAGEMENT: config.origin("base_url"), DASHBOARDS: config.origin("dashboards_url")},
            credential_origins(config.origins),
        )
        self._budgets = {
            MANAGEMENT: RequestBudget(config.rate),
            DASHBOARDS: RequestBudget(config.dashboards_rate),
        }
        self._pacer = Pacer(config.parallelism)
        budget_seconds = config.limits.retry_budget
        self.health = {
            MANAGEMENT: InterfaceHealth(MANAGEMENT, config.base_url, budget_seconds),
            DASHBOARDS: InterfaceHealth(DASHBOARDS, config.dashboards_url, budget_seconds),
        }
        # Set by ``halt``: no request starts any more (one already on the wire is not touched).
        self.halted: str | None = None
        # The tasks whose request is on the wire now (so an abort can tell sent from not sent).
        self.sending: set[asyncio.Task[Any]] = set()
        self._backoff = wait_exponential_jitter(multiplier=0.2, max=config.max_backoff, jitter=0.2)
        limits = httpx.Limits(
            max_connections=max(1, config.parallelism),
            max_keepalive_connections=max(1, config.parallelism),
        )
        timeout = httpx.Timeout(config.timeout)
        verify = tls_context(config)
        # The lean transport, unless a test's transport or an environment proxy is in play.
        # Requests then go to it straight from ``build_request``: ``AsyncClient.send`` would
        # add only what reconcile does not use (redirect following, an auth flow, a cookie
        # jar) at about a fifth of the client's CPU per request.
        self._lean: dict[str, LeanTransport] = {}
        if transport is None and not environment_proxies():
            for interface in (MANAGEMENT, DASHBOARDS):
                self._lean[interface] = LeanTransport(
                    ssl_context=verify, max_connections=max(1, config.parallelism)
                )
        self._http = {
            MANAGEMENT: httpx.AsyncClient(
                base_url=config.base_url.rstrip("/"),
                limits=limits,
                timeout=timeout,
                transport=self._lean.get(MANAGEMENT, transport),
                verify=verify,
                headers={
                    "Authorization": basic_authorization(config.key_id, config.key_secret),
                    "Accept": "application/json",
                    "User-Agent": "reconcile",
                },
            ),
            DASHBOARDS: httpx.AsyncClient(
                base_url=config.dashboards_url.rstrip("/"),
                headers={
                    "Authorization": f"Bearer {config.dashboards_token}",
                    "Accept": "application/json",
                    "User-Agent": "reconcile",
                },
                limits=limits,
                timeout=timeout,
                transport=self._lean.get(DASHBOARDS, transport),
                verify=verify,
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

    async def on_the_wire(self) -> None:
        """Return once the requests just started are written, so that CPU-bound work that
        follows (decoding, planning) does not hold them back on this process's event loop."""
        await asyncio.sleep(0)  # tasks just created reach their transport
        for lean in self._lean.values():
            await lean.written()

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
        # then wait here cheaply instead of each building its retry state up front, which
        # delayed the first request by a third of a second at 1,000 pipes.
        async with self._pacer.slot():
            self._check_halted()
            try:
                return await self._call(interface, method, path, body, resource, idempotent, decode)
            except (NotFound, MethodNotAllowed) as exc:
                raise (exc.as_type(Unsupported) if optional else exc) from None

    def halt(self, reason: str) -> None:
        """Start no new request (nor retry) from now on: each raises ``Interrupted`` instead,
        also one waiting for the request budget."""
        self.halted = reason
        for budget in self._budgets.values():
            budget.halt(reason)

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
        budget = self._budgets[interface]
        health = self.health[interface]
        try:
            async for attempt in retrying(
                attempts, budget, self._backoff, idempotent=idempotent, health=health
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
            if health.down is not None:  # the interface was given up: the run's one error
                raise health.down.with_delivery(attempts.delivery()) from None
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
        budget = self._budgets[interface]
        health = self.health[interface]
        self.first_contact.check()
        self._check_halted()
        health.check()
        # The budget's place is held until the answer (or the failure) is in: see budget.slot.
        # No start is waited for past the moment the interface would be given up.
        try:
            async with budget.slot(until=health.give_up_at) as place:
                started = place.started
                self.first_contact.check()
                self._check_halted()
                health.check()
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
            raise health.give_up() from None
        status = response.status_code
        self.first_contact.answered(interface, status)
        if status in (401, 403):
            refused = parse_error(interface, response, method, path)
            self.first_contact.refused(interface, status, refused.message, refused.request_id, path)
        if status == 429:
            self.stats.throttled += 1
            self.stats.throttled_by[interface] += 1
            pause, why = server_pause(response, attempts)
            budget.penalize(pause, started)
            attempts.notes.append(f"HTTP 429 ({why})")
            attempts.turned_away = True
            refusal = parse_error(interface, response, method, path)
            health.failure(attempts.attempt_started, answer_text(refusal, why))
            raise Retryable(refusal)
        budget.admitted(started)
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
            health.failure(attempts.attempt_started, answer_text(failure))
            if status == 503:
                attempts.turned_away = True
            else:
                attempts.maybe_delivered = True
            raise Retryable(failure, unknown_outcome=status != 503)
        health.success()
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
        (``heard`` is called as soon as the status line is in)."""
        limits = self.config.limits
        deadline = max(0.001, min(limits.deadline, attempts.remaining()))
        http = self._http[interface]
        status: int | None = None
        try:
            async with asyncio.timeout(deadline):
                request = http.build_request(method, path, content=payload, headers=headers)
                lean = self._lean.get(interface)
                sent = time.monotonic()
                if lean is not None:
                    response = await lean.handle_async_request(request)
                else:
                    response = await http.send(request, stream=True)
                heard()
                status = response.status_code
                try:
                    body = await read_capped(response, limits.max_response_bytes)
                finally:
                    await response.aclose()
                self._pacer.observe(time.monotonic() - sent)
        except TimeoutError:
            note = f"no complete answer within {deadline:.3g} s"
            attempts.notes.append(note)
            attempts.maybe_delivered = True
            shown = f"HTTP {status}, then {note}" if status is not None else note
            self.health[interface].failure(attempts.attempt_started, shown)
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
            self.first_contact.transport_error(interface, exc, str(http.base_url))
            error = transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            self.health[interface].failure(attempts.attempt_started, error.message, refused=True)
            raise Retryable(error) from None
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            # A connection never made, or a free one never found, sent nothing: not a request
            # sent (``stats.requests`` counts only attempts that had a connection).
            unsent = isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
            if unsent:
                self.stats.requests[interface] -= 1
            if isinstance(exc, httpx.ConnectTimeout):
                self.first_contact.transport_error(interface, exc, str(http.base_url))
            error = transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            if not unsent:
                attempts.maybe_delivered = True
            self.health[interface].failure(attempts.attempt_started, error.message)
            raise Retryable(error, unknown_outcome=True) from None
        # The body was read here under the cap; hand it to the response as httpx's own
        # ``aread`` would, so ``json()`` and ``content`` work as usual.
        response._content = body
        return response
