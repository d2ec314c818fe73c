"""The API client: the only module of reconcile that speaks HTTP.

It drives both interfaces of the service: management (``/v1``, HTTP Basic with a key id and
secret, responses wrapped in ``{status, requestId, result}``) and dashboards (``/api/v2``,
Bearer token, ``{data}``). Every request passes through a shared ``RequestBudget`` (the
service's rate limit) and a concurrency cap; reads are retried on 429, 502/503/504 and
connection errors with capped exponential backoff and jitter; writes are retried only when
resending cannot do harm (``idempotent=True``), and otherwise an unknown outcome is raised as
``OutcomeUnknown`` for the caller to resolve by re-reading. Errors become ``ApiError`` with the
server's status, code, message and requestId. Every request is bounded (``RequestLimits``
in ``reconciler.client.limits``): waits the server asks for are capped, each attempt has a
deadline covering its whole body, bodies have a size cap, redirects are refused and said to
be, and retries stop at a time and attempt budget with an error that says what was tried.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import math
import ssl
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    wait_exponential_jitter,
)

from reconciler.client.budget import Rate, RequestBudget
from reconciler.client.firstcontact import FirstContact
from reconciler.client.limits import (
    BodyTooLarge,
    RequestLimits,
    format_size,
    read_capped,
    redirect_target,
    server_wait,
)
from reconciler.model.errors import (
    ApiError,
    ConfigError,
    DeadlineExceeded,
    Interrupted,
    MethodNotAllowed,
    NotFound,
    RateLimited,
    RedirectRefused,
    ResponseTooLarge,
    Unsupported,
    api_error_type,
)
from reconciler.model.secrets import reveal

MANAGEMENT = "management"
DASHBOARDS = "dashboards"

# The service's own limits per key: 10 management requests per 10 s, 100 dashboards per minute.
MANAGEMENT_RATE = Rate(10, 10.0)
DASHBOARDS_RATE = Rate(100, 60.0)


class OutcomeUnknown(ApiError):
    """A non-idempotent write was sent but no answer came back: it may or may not have applied."""


class _Retryable(Exception):
    """Internal: an attempt failed in a way that may be retried."""

    def __init__(self, error: ApiError, *, unknown_outcome: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.unknown_outcome = unknown_outcome


@dataclass(frozen=True)
class ApiConfig:
    """Where and how to reach the service."""

    base_url: str
    key_id: str
    key_secret: str = field(repr=False)
    dashboards_url: str
    dashboards_token: str = field(repr=False)
    insecure: bool = False
    rate: Rate = MANAGEMENT_RATE
    dashboards_rate: Rate = DASHBOARDS_RATE
    parallelism: int = 8
    timeout: float = 30.0
    max_attempts: int = 6
    max_backoff: float = 20.0
    limits: RequestLimits = field(default_factory=RequestLimits)

    def check(self) -> None:
        """Refuse missing credentials, a missing URL, or plain http to a host that is not
        loopback (unless insecure), or a timeout that is not a positive finite number."""
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ConfigError(
                f"--timeout: expected a positive number of seconds, got {self.timeout}"
            )
        missing = [
            name
            for name, value in (
                ("RECONCILE_KEY_ID", self.key_id),
                ("RECONCILE_KEY_SECRET", self.key_secret),
            )
            if not value
        ]
        if missing:
            raise ConfigError(
                f"no API credentials: set {' and '.join(missing)} (or pass --key-id/--key-secret)"
            )
        for name, url in (
            ("RECONCILE_BASE_URL", self.base_url),
            ("RECONCILE_DASHBOARDS_URL", self.dashboards_url),
        ):
            if not url:
                raise ConfigError(f"no API URL: set {name} or pass --base-url")
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(f"{name} {url!r} is not an http(s) URL")
            if parts.scheme == "http" and not self.insecure and not _is_loopback(parts.hostname):
                raise ConfigError(
                    f"refusing plain http:// to {parts.hostname}: credentials would cross the "
                    "network unencrypted; use https:// or pass --insecure"
                )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class RequestRecord:
    """One completed request, for summaries and per-action results."""

    interface: str
    method: str
    path: str
    status: int | None
    request_id: str | None
    attempts: int


@dataclass
class ClientStats:
    """Counters of what the client sent."""

    requests: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})
    throttled: int = 0
    throttled_by: dict[str, int] = field(default_factory=lambda: {MANAGEMENT: 0, DASHBOARDS: 0})


def _parse_error(interface: str, response: httpx.Response, method: str, path: str) -> ApiError:
    status = response.status_code
    request_id: str | None = None
    code: str | None = None
    message = ""
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        raw_id = body.get("requestId")
        request_id = raw_id if isinstance(raw_id, str) else None
        text = body.get("error") if interface == MANAGEMENT else body.get("message")
        if text is None:
            text = body.get("error") or body.get("message")
        if isinstance(text, str):
            head, sep, rest = text.partition(":")
            if sep and head.replace("_", "").isalpha() and head.isupper():
                code, message = head, rest.strip()
            else:
                message = text
    if not message:
        if status == 401:
            message = (
                "unauthorized: check RECONCILE_KEY_ID / RECONCILE_KEY_SECRET"
                if interface == MANAGEMENT
                else "unauthorized: check RECONCILE_DASHBOARDS_TOKEN"
            )
        else:
            message = response.reason_phrase or "error"
    return api_error_type(status)(
        status=status, message=message, request_id=request_id, code=code, method=method, path=path
    )


class _Attempts:
    """The clock and history of one logical request, for its retry budget and final message."""

    def __init__(self, limits: RequestLimits, max_attempts: int) -> None:
        self.limits = limits
        self.max_attempts = max_attempts
        self.started: float | None = None
        self.count = 0
        self.notes: list[str] = []

    def begin(self) -> None:
        """Count an attempt; the budget's clock starts with the first."""
        self.count += 1
        if self.started is None:
            self.started = time.monotonic()

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


def _gave_up(error: ApiError, attempts: _Attempts) -> ApiError:
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


def _tls_context(config: ApiConfig) -> ssl.SSLContext:
    """Return the one TLS context both interfaces share.

    Loading the CA bundle costs ~25 ms, and httpx would do it once per client; with plain
    http on both URLs (loopback or ``--insecure``) no TLS is ever spoken, so the context is a
    bare one that loads nothing and would refuse every certificate (it fails closed).
    """
    if any(urlsplit(url).scheme == "https" for url in (config.base_url, config.dashboards_url)):
        return httpx.create_ssl_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


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
            shared_url=config.dashboards_url.rstrip("/") == config.base_url.rstrip("/")
        )
        self._budgets = {
            MANAGEMENT: RequestBudget(config.rate),
            DASHBOARDS: RequestBudget(config.dashboards_rate),
        }
        self._gate = asyncio.Semaphore(max(1, config.parallelism))
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
        verify = _tls_context(config)
        self._http = {
            MANAGEMENT: httpx.AsyncClient(
                base_url=config.base_url.rstrip("/"),
                auth=httpx.BasicAuth(config.key_id, config.key_secret),
                limits=limits,
                timeout=timeout,
                transport=transport,
                verify=verify,
                headers={"Accept": "application/json", "User-Agent": "reconcile"},
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
                transport=transport,
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

    async def aclose(self) -> None:
        """Close both connection pools."""
        for client in self._http.values():
            await client.aclose()

    # -- public verbs ---------------------------------------------------------------------

    async def get(self, path: str, *, resource: str | None = None, optional: bool = False) -> Any:
        """GET a management path and return the envelope's ``result``.

        ``optional`` marks an endpoint the spec does not guarantee: a 404/405 then raises
        ``Unsupported`` so the caller can fall back.
        """
        result, _ = await self.call(
            MANAGEMENT, "GET", path, resource=resource, idempotent=True, optional=optional
        )
        return result

    async def dashboards(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        resource: str | None = None,
        idempotent: bool | None = None,
        optional: bool = False,
    ) -> Any:
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
        body: Mapping[str, Any] | None = None,
        *,
        resource: str | None = None,
        idempotent: bool,
        optional: bool = False,
    ) -> tuple[Any, RequestRecord]:
        """Send one logical request (with retries); return the payload and its record.

        Raises an ``ApiError`` branch chosen by status (``NotFound``, ``RateLimited``, …);
        with ``optional``, a 404/405 is raised as ``Unsupported``.
        """
        # The concurrency slot is taken before any per-request work: a thousand queued reads
        # then wait here cheaply instead of each building its retry state up front, which
        # delayed the first request by a third of a second at 1,000 pipes.
        async with self._gate:
            self._check_halted()
            try:
                return await self._call(interface, method, path, body, resource, idempotent)
            except (NotFound, MethodNotAllowed) as exc:
                raise (exc.as_type(Unsupported) if optional else exc) from None

    def halt(self, reason: str) -> None:
        """Start no new request (nor retry) from now on: each raises ``Interrupted`` instead."""
        self.halted = reason

    def _check_halted(self) -> None:
        if self.halted is not None:
            raise Interrupted(self.halted)

    async def _call(
        self,
        interface: str,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        resource: str | None,
        idempotent: bool,
    ) -> tuple[Any, RequestRecord]:
        payload = None if body is None else json.dumps(reveal(body), separators=(",", ":"))
        attempts = _Attempts(self.config.limits, self.config.max_attempts)
        budget = self._budgets[interface]

        def should_retry(exc: BaseException) -> bool:
            if not isinstance(exc, _Retryable):
                return False
            return idempotent or not exc.unknown_outcome

        def wait(state: RetryCallState) -> float:
            outcome = state.outcome
            exc = outcome.exception() if outcome is not None else None
            if isinstance(exc, _Retryable) and isinstance(exc.error, RateLimited):
                return 0.0  # the budget holds every caller until the server's reset time
            return float(self._backoff(state))

        def stop(state: RetryCallState) -> bool:
            # The server's (capped) wait is held by the shared budget: it counts here too.
            return attempts.exhausted(state.upcoming_sleep + budget.blocked_for())

        retrying = AsyncRetrying(
            stop=stop,
            wait=wait,
            retry=retry_if_exception(should_retry),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    response = await self._once(interface, method, path, payload, attempts)
                    unwrapped: tuple[Any, RequestRecord] = self._unwrap(
                        interface, response, method, path, attempts.count
                    )
                    return unwrapped
        except _Retryable as exc:
            error = _gave_up(exc.error, attempts)
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
        self, interface: str, method: str, path: str, payload: str | None, attempts: _Attempts
    ) -> httpx.Response:
        headers = {"Content-Type": "application/json"} if payload is not None else None
        budget = self._budgets[interface]
        self.first_contact.check()
        self._check_halted()
        # The budget's place is held until the answer (or the failure) is in: see budget.slot.
        async with budget.slot() as started:
            self.first_contact.check()
            self._check_halted()
            attempts.begin()
            self.stats.requests[interface] += 1
            task = asyncio.current_task()
            if task is not None:
                self.sending.add(task)
            try:
                response = await self._exchange(interface, method, path, payload, headers, attempts)
            finally:
                self.sending.discard(task)
        status = response.status_code
        self.first_contact.answered(interface, status)
        if status in (401, 403):
            refused = _parse_error(interface, response, method, path)
            self.first_contact.refused(interface, status, refused.message, refused.request_id)
        if status == 429:
            self.stats.throttled += 1
            self.stats.throttled_by[interface] += 1
            pause, note = self._server_pause(response, attempts)
            budget.penalize(pause, started)
            attempts.notes.append(note)
            raise _Retryable(_parse_error(interface, response, method, path))
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
            raise _Retryable(
                _parse_error(interface, response, method, path), unknown_outcome=status != 503
            )
        return response

    async def _exchange(
        self,
        interface: str,
        method: str,
        path: str,
        payload: str | None,
        headers: dict[str, str] | None,
        attempts: _Attempts,
    ) -> httpx.Response:
        """Send one attempt and read its whole body within the deadline and the size cap."""
        limits = self.config.limits
        deadline = max(0.001, min(limits.deadline, attempts.remaining()))
        http = self._http[interface]
        status: int | None = None
        try:
            async with asyncio.timeout(deadline):
                request = http.build_request(method, path, content=payload, headers=headers)
                response = await http.send(request, stream=True)
                status = response.status_code
                try:
                    body = await read_capped(response, limits.max_response_bytes)
                finally:
                    await response.aclose()
        except TimeoutError:
            note = f"no complete answer within {deadline:.3g} s"
            attempts.notes.append(note)
            late = DeadlineExceeded(
                status=status,
                message=f"{note} (the request deadline: {RequestLimits.option('deadline')})",
                method=method,
                path=path,
            )
            raise _Retryable(late, unknown_outcome=True) from None
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
            self.first_contact.transport_error(interface, exc, str(http.base_url))
            # Never reached the server: safe to resend anything.
            error = self._transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            raise _Retryable(error) from None
        except (httpx.TransportError, httpx.TimeoutException) as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                self.first_contact.transport_error(interface, exc, str(http.base_url))
            error = self._transport_error(exc, method, path)
            attempts.notes.append(type(exc).__name__)
            raise _Retryable(error, unknown_outcome=True) from None
        # The body was read here under the cap; hand it to the response as httpx's own
        # ``aread`` would, so ``json()`` and ``content`` work as usual.
        response._content = body
        return response

    def _server_pause(self, response: httpx.Response, attempts: _Attempts) -> tuple[float, str]:
        """Return how long to hold every caller after a 429 (capped) and a note saying why."""
        cap = self.config.limits.max_wait
        asked = server_wait(response.headers)
        if asked is None:
            # No usable header (absent, negative or garbage): back off exponentially instead.
            pause = min(cap, 2.0 ** (attempts.count - 1))
            return pause, f"HTTP 429 (no usable wait header; backing off {pause:g} s)"
        seconds, header = asked
        if seconds > cap:
            option = RequestLimits.option("max_wait")
            note = f"HTTP 429 ({header} asked {seconds:.0f} s, capped at {cap:g} s: {option})"
            return cap, note
        return seconds, f"HTTP 429 ({header} {seconds:.3g} s)"

    @staticmethod
    def _transport_error(exc: Exception, method: str, path: str) -> ApiError:
        reason = type(exc).__name__
        detail = str(exc)
        request = getattr(exc, "_request", None)
        if isinstance(request, httpx.Request):
            detail = (
                f"{detail} ({request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')})"
            )
        return ApiError(
            status=None,
            message=f"{reason}: {detail}" if detail else reason,
            method=method,
            path=path,
        )

    def _unwrap(
        self, interface: str, response: httpx.Response, method: str, path: str, attempts: int
    ) -> Any:
        status = response.status_code
        request_id: str | None = None
        if status >= 400:
            raise _parse_error(interface, response, method, path)
        try:
            body = response.json()
        except ValueError:
            raise ApiError(
                status=status, message="response is not JSON", method=method, path=path
            ) from None
        member = "result" if interface == MANAGEMENT else "data"
        if not isinstance(body, dict) or member not in body:
            raise ApiError(
                status=status,
                message=f"response has no '{member}' envelope",
                method=method,
                path=path,
            )
        if interface == MANAGEMENT:
            raw_id = body.get("requestId")
            request_id = raw_id if isinstance(raw_id, str) else None
        payload = body[member]
        return payload, RequestRecord(interface, method, path, status, request_id, attempts)
