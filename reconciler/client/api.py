"""The API client: reconcile's one request path to the service, and its public verbs.

``Client`` drives both interfaces of the service: management (``/v1``, HTTP Basic with a key
id and secret) and dashboards (``/api/v2``, Bearer token), each on httpx's own connection pool
(proxies named by the environment are used as httpx uses them). One request takes one
concurrency slot (``--parallelism``) and then passes four steps, each a class of its own:

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

Steps 1 to 3 are one attempt, made by ``Wire`` (``reconciler.client.wire``, which holds the
connection pools and is the only other module that speaks HTTP); this module holds the
concurrency slot, the retry loop and the errors it ends in, and ``observe_clients``, which
collects every client's ``ClientStats`` for the metrics. ``ApiConfig``
(``reconciler.client.config``) says where and how to reach the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import TracebackType

import httpx
from tenacity import wait_exponential_jitter

from reconciler.client.config import DASHBOARDS, MANAGEMENT, ApiConfig
from reconciler.client.health import Health, credential_origins
from reconciler.client.ratelimit import SlidingWindowLimiter
from reconciler.client.responses import RequestRecord, Undecoded, unwrap
from reconciler.client.retry import Attempts, OutcomeUnknown, Retryable, gave_up, retrying
from reconciler.client.wire import ClientStats, Wire
from reconciler.model.apierrors import (
    ApiError,
    Delivery,
    InterfaceDown,
    MethodNotAllowed,
    NotFound,
    NotSent,
    Unsupported,
)
from reconciler.model.json import JsonValue
from reconciler.model.secrets import SecretTree, reveal

__all__ = ["ApiConfig", "Client", "OutcomeUnknown", "RequestRecord", "observe_clients"]

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
        self._backoff = wait_exponential_jitter(multiplier=0.2, max=config.max_backoff, jitter=0.2)
        self._wire = Wire(config, transport, self.limiters, self.health, self.stats)

    @property
    def halted(self) -> str | None:
        """The reason ``halt`` was given: no request starts any more (``None`` until then)."""
        return self._wire.halted

    @property
    def sending(self) -> set[asyncio.Task[object]]:
        """The tasks whose request is on the wire now (so an abort can tell sent from not sent)."""
        return self._wire.sending

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
        await self._wire.aclose()

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
            self._wire.check_halted()
            try:
                return await self._call(interface, method, path, body, resource, idempotent, decode)
            except (NotFound, MethodNotAllowed) as exc:
                raise (exc.as_type(Unsupported) if optional else exc) from None

    def halt(self, reason: str) -> None:
        """Start no new request (nor retry) from now on: each raises ``Interrupted`` instead,
        also one waiting for a place in the rate limit."""
        self._wire.halt(reason)

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
                    response = await self._wire.send(interface, method, path, payload, attempts)
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
