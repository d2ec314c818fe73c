"""Fail fast on the obvious: a server that cannot be reached, credentials that are refused.

Retries exist for a server that answered before and stumbles; they are wrong for a wrong port,
an ``https://`` URL pointing at a plain-HTTP server, or a bad key, where each retry only
delays the one useful message. ``FirstContact`` watches each interface: a connection error
(refused, TLS, or a connect timeout) before any response has arrived from it becomes
``ServiceUnreachable`` (not retried), and a
401 — or a 403 before any request on that interface succeeded — becomes
``AuthenticationFailed``, naming the variables to check. Once either happens, every later
request of the run fails at once with the same error, so the run stops with one message
instead of one per resource. A 403 that names the very organization the request addressed
(``Key is not allowed to access organization …``) refuses that organization, not the key: it
stays an error of the resources in it (``refused_organizations`` records it), and resources
of other organizations are still planned.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import httpx

from reconciler.client.paths import organization_of
from reconciler.model.errors import AuthenticationFailed, ReconcileError, ServiceUnreachable

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


class FirstContact:
    """Turns first-contact failures into one fatal error for the whole run."""

    def __init__(
        self, url_origins: Mapping[str, str], credential_origins: Mapping[str, str] | None = None
    ) -> None:
        # Per interface: what set its URL (a flag, a variable, a project-file key).
        self._url_origins = url_origins
        # Per interface: what set its credentials (an environment's key and variable, a flag…);
        # absent: ``CREDENTIAL_VARIABLES``.
        self._credential_origins = dict(credential_origins or {})
        self._answered: set[str] = set()
        self._succeeded: set[str] = set()
        self.fatal: ReconcileError | None = None
        # Organizations the key was refused (a 403 naming the organization the path addresses).
        self.refused_organizations: set[str] = set()

    def check(self) -> None:
        """Raise the run's fatal error, if one happened (called before each request)."""
        if self.fatal is not None:
            raise self.fatal

    def transport_error(self, interface: str, exc: Exception, url: str) -> None:
        """Raise ``ServiceUnreachable`` if ``interface`` never answered; else return (retry)."""
        if interface in self._answered or not isinstance(
            exc, httpx.ConnectError | httpx.ConnectTimeout
        ):
            return
        self.fatal = ServiceUnreachable(
            interface=interface,
            url=url,
            reason=_reason(exc),
            variable=self._url_origins.get(interface, "the base URL"),
        )
        raise self.fatal

    def answered(self, interface: str, status: int) -> None:
        """Record that ``interface`` answered with ``status``."""
        self._answered.add(interface)
        if status < 400:
            self._succeeded.add(interface)

    def refused(
        self, interface: str, status: int, detail: str, request_id: str | None, path: str = ""
    ) -> None:
        """Raise ``AuthenticationFailed`` for a 401, or a 403 before any success; else return.

        A 403 whose message names the organization ``path`` addresses is a refusal of that
        organization only: it is recorded and left to the caller as that request's error.
        """
        organization = organization_of(path)
        if status == 403 and organization and organization in detail:
            self.refused_organizations.add(organization)
            return
        if status == 401 or (status == 403 and interface not in self._succeeded):
            self.fatal = AuthenticationFailed(
                interface=interface,
                status=status,
                detail=detail,
                request_id=request_id,
                variables=self._credential_origins.get(interface)
                or CREDENTIAL_VARIABLES.get(interface, "the credentials"),
            )
            raise self.fatal


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
