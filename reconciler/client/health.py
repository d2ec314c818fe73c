"""The run's health of both interfaces: when to stop sending, and the one error that says why.

Retries exist for a server that answered before and stumbles; they are wrong for a wrong port,
an ``https://`` URL pointing at a plain-HTTP server, a bad key, or a server that has gone.
``Health`` keeps one record per interface and ends the run (or the interface) in four cases:

- **first contact fails**: a connection error (refused, TLS, or a connect timeout) before the
  interface ever answered is ``ServiceUnreachable``, not retried;
- **credentials are refused**: a 401, or a 403 before any request on that interface
  succeeded, is ``AuthenticationFailed``, naming the variables to check. A 403 whose message
  names the very organization the request addressed (``Key is not allowed to access
  organization …``) refuses that organization, not the key: it stays an error of that request
  (``refused_organizations`` records it). Either of these fails every later request of the run
  at once, so it stops with one message instead of one per resource;
- **the run's retry budget is spent**: from the start of the first failed attempt after the
  interface's last success, ``retry_budget`` seconds (``--retry-budget``) have gone by in
  waits and retries. A failure is an attempt the client retries (a 429, 502/503/504, a
  transport error, a body not complete within the request deadline); a success is any other
  complete answer (a 404 is the server at work). A wait or retry that would end past the
  budget is not started: the interface is given up at once, so a run against a server that
  never succeeds ends within the budget plus one request deadline;
- **connections are refused after the interface had answered**: nothing listens any more. A
  restarting process is back within seconds or not soon, so refusals are retried for
  ``REFUSED_GRACE`` seconds, no more.

The last two give the interface up: every further request to it fails at once with
``InterfaceDown``, which names the server's last answer; the other interface carries on.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from reconciler.client.limits import RequestLimits
from reconciler.client.paths import organization_of
from reconciler.model.apierrors import (
    ApiError,
    AuthenticationFailed,
    InterfaceDown,
    ServiceUnreachable,
)
from reconciler.model.errors import ReconcileError

__all__: list[str] = []

# Seconds of refused connections (after a success) before the interface is given up.
REFUSED_GRACE = 5.0

# Per interface: the variables holding its credentials.
CREDENTIAL_VARIABLES = {
    "management": "RECONCILE_KEY_ID and RECONCILE_KEY_SECRET (or --key-id/--key-secret)",
    "dashboards": "RECONCILE_DASHBOARDS_TOKEN (or --dashboards-token)",
}


def credential_origins(origins: Mapping[str, str]) -> dict[str, str]:
    """Return, per interface, where its credentials came from (``ApiConfig.origins`` by field);
    an interface whose credentials' origins are not all known is left out."""
    out: dict[str, str] = {}
    for interface, fields in (
        ("management", ("key_id", "key_secret")),
        ("dashboards", ("dashboards_token",)),
    ):
        named = [origins.get(f) for f in fields]
        if all(named):
            out[interface] = " and ".join(str(n) for n in named)
    return out


@dataclass
class _Record:
    """What one interface has done so far in this run."""

    url: str  # as messages name it: never a user:password@ or a query
    url_origin: str
    credentials: str
    answered: bool = False  # any answer at all (first contact made)
    succeeded: bool = False  # an answer under 400 (a 403 after it refuses one request only)
    served: bool = False  # an answer that was not retried (``success``)
    failing_since: float | None = None
    refused_since: float | None = None
    last_answer: str = ""
    down: InterfaceDown | None = None


class Health:
    """Both interfaces' first contact, failure clocks and, once given up, their errors."""

    def __init__(
        self,
        urls: Mapping[str, tuple[str, str]],
        retry_budget: float,
        credentials: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``urls``: per interface, its URL and what set it; ``credentials``: per interface,
        what set its credentials (absent: ``CREDENTIAL_VARIABLES``)."""
        self.retry_budget = retry_budget
        self._clock = clock
        self._records = {
            interface: _Record(
                _shown(url),
                origin,
                (credentials or {}).get(interface)
                or CREDENTIAL_VARIABLES.get(interface, "the credentials"),
            )
            for interface, (url, origin) in urls.items()
        }
        self.fatal: ReconcileError | None = None
        # Organizations the key was refused (a 403 naming the organization the path addresses).
        self.refused_organizations: set[str] = set()

    def check(self, interface: str) -> None:
        """Raise the run's fatal error or the interface's ``InterfaceDown``, if there is one."""
        if self.fatal is not None:
            raise self.fatal
        down = self._records[interface].down
        if down is not None:
            raise down

    def down(self, interface: str) -> InterfaceDown | None:
        """Return the error of a given-up interface (None while it is not)."""
        return self._records[interface].down

    def stopped(self) -> tuple[InterfaceDown, ...]:
        """Return the errors of every interface given up in this run."""
        return tuple(r.down for r in self._records.values() if r.down is not None)

    def unreachable(self, interface: str, exc: Exception) -> None:
        """Raise ``ServiceUnreachable`` for a connection error before ``interface`` ever
        answered; else return (the caller retries)."""
        record = self._records[interface]
        if record.answered or not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return
        self.fatal = ServiceUnreachable(
            interface=interface, url=record.url, reason=_reason(exc), variable=record.url_origin
        )
        raise self.fatal

    def answered(self, interface: str, status: int, refusal: ApiError | None, path: str) -> None:
        """Record an answer; for a 401, or a 403 before any success, raise
        ``AuthenticationFailed`` (``refusal``: the answer read as an error, for 401/403)."""
        record = self._records[interface]
        record.answered = True
        if status < 400:
            record.succeeded = True
        if status not in (401, 403) or refusal is None:
            return
        organization = organization_of(path)
        if status == 403 and organization and organization in refusal.message:
            self.refused_organizations.add(organization)
            return
        if status == 401 or not record.succeeded:
            self.fatal = AuthenticationFailed(
                interface=interface,
                status=status,
                detail=refusal.message,
                request_id=refusal.request_id,
                variables=record.credentials,
            )
            raise self.fatal

    def success(self, interface: str) -> None:
        """Record a complete answer that is not retried: the clocks start again."""
        record = self._records[interface]
        record.served = True
        record.failing_since = record.refused_since = None

    def failure(
        self, interface: str, started: float, answer: str, *, refused: bool = False
    ) -> None:
        """Record an attempt begun at ``started`` that failed as ``answer`` says (and is
        retried); ``refused``: the connection was refused (nothing was sent)."""
        record = self._records[interface]
        record.last_answer = answer
        if record.failing_since is None or started < record.failing_since:
            record.failing_since = started
        if not refused:
            record.refused_since = None
        elif record.served and record.refused_since is None:
            record.refused_since = self._clock()

    def give_up_at(self, interface: str) -> float:
        """Return the clock time at which the interface is given up (inf: it is not failing;
        -inf: it was given up, or the run has failed)."""
        record = self._records[interface]
        if self.fatal is not None or record.down is not None:
            return float("-inf")
        limit = float("inf")
        if record.failing_since is not None:
            limit = record.failing_since + self.retry_budget
        if record.refused_since is not None:
            limit = min(limit, record.refused_since + REFUSED_GRACE)
        return limit

    def exhausted(self, interface: str, upcoming_wait: float) -> bool:
        """Tell whether a retry after ``upcoming_wait`` seconds would end past the bounds; if
        so, give the interface up."""
        if self._records[interface].down is not None:
            return True
        if self._clock() + upcoming_wait < self.give_up_at(interface):
            return False
        self.give_up(interface, upcoming_wait)
        return True

    def give_up(self, interface: str, upcoming_wait: float = 0.0) -> InterfaceDown:
        """Give the interface up (if not already) and return the error every request gets;
        ``upcoming_wait`` is the wait that would have passed the bounds."""
        record = self._records[interface]
        if record.down is None:
            record.down = InterfaceDown(
                interface=interface,
                url=record.url,
                why=self._why(record, upcoming_wait),
                last_answer=record.last_answer or "none",
            )
        return record.down

    def _why(self, record: _Record, upcoming_wait: float) -> str:
        now = self._clock()
        failing = record.failing_since
        budget_end = float("inf") if failing is None else failing + self.retry_budget
        if record.refused_since is not None and record.refused_since + REFUSED_GRACE <= budget_end:
            return (
                f"connections refused for {now - record.refused_since:.1f} s after it had "
                "answered (nothing listens there any more)"
            )
        spent = 0.0 if failing is None else now - failing
        since = "since its last success" if record.served else "without a single success"
        more = f", and {upcoming_wait:.2g} s more would pass" if spent < self.retry_budget else ""
        return (
            f"{spent:.1f} s of waits and retries {since}{more}: the run's retry budget of "
            f"{self.retry_budget:g} s ({RequestLimits.option('retry_budget')})"
        )


def _shown(url: str) -> str:
    """Return ``url`` as messages name it: no ``user:password@``, no query."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path.rstrip('/')}"


def answer_text(error: ApiError, wait: str | None = None) -> str:
    """Describe a server's answer for ``InterfaceDown``: status, message, requestId and the
    wait it asked for (``wait``, as ``retry.server_pause`` says it)."""
    text = f"HTTP {error.status}"
    if error.message:
        text += f": {error.message}"
    if error.request_id:
        text += f" (requestId {error.request_id})"
    return f"{text} [{wait}]" if wait else text


def _reason(exc: Exception) -> str:
    """Say in words why a connection failed (refused, TLS, no answer, name lookup)."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "no answer to the connection (a wrong host or port, or a firewall dropping packets)"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return (
                f"TLS handshake failed ({cause.reason or cause}; the server speaks plain "
                "http://, or its certificate is not trusted)"
            )
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (nothing listens on that port)"
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused (nothing listens on that port)"
    if "ssl" in text.lower() or "tls" in text.lower():
        return f"TLS handshake failed ({text}; the server may speak plain http://)"
    return text
