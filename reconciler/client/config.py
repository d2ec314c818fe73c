"""Where and how to reach the service: its two interfaces, their rates, and the TLS context.

``ApiConfig`` is checked before anything is sent: credentials present, URLs that are http(s)
and well formed (host, port), and no plain http to a host that is not loopback unless
``insecure`` says so. Every message names where the bad value came from (``origins``: the
flag, variable or project-file key a caller resolved it from). Both interfaces share one TLS
context (see ``tls_context``).
"""

from __future__ import annotations

import ipaddress
import math
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from reconciler.client import defaults
from reconciler.client.limits import RequestLimits
from reconciler.client.ratelimit import Rate
from reconciler.model.errors import ConfigError

__all__ = ["DASHBOARDS", "MANAGEMENT", "ApiConfig"]


MANAGEMENT = "management"
DASHBOARDS = "dashboards"

# What names each setting in a message when the caller did not say where it came from.
DEFAULT_ORIGINS = {
    "base_url": "RECONCILE_BASE_URL (or --base-url)",
    "dashboards_url": "RECONCILE_DASHBOARDS_URL (or --dashboards-url)",
    "timeout": "--timeout",
}

# The service's own limits per key: 10 management requests per 10 s, 100 dashboards per minute.
MANAGEMENT_RATE = Rate(*defaults.MANAGEMENT_RATE)
DASHBOARDS_RATE = Rate(*defaults.DASHBOARDS_RATE)


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
    parallelism: int = defaults.PARALLELISM
    timeout: float = defaults.TIMEOUT
    max_attempts: int = defaults.MAX_ATTEMPTS
    max_backoff: float = defaults.MAX_BACKOFF
    limits: RequestLimits = field(default_factory=RequestLimits)
    # Where settings came from, by field name (``base_url`` → ``--base-url``, a variable, a
    # project-file key): named by the messages about them. Absent: ``DEFAULT_ORIGINS``.
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)

    def origin(self, setting: str) -> str:
        """Name where ``setting`` (a field name) came from, for a message."""
        found = self.origins.get(setting)
        if found:
            return found
        if setting == "dashboards_url" and _same_url(self.dashboards_url, self.base_url):
            return f"{self.origin('base_url')}; the dashboards URL defaults to it"
        return DEFAULT_ORIGINS.get(setting, setting)

    def check(self) -> None:
        """Refuse missing credentials, a missing URL, or plain http to a host that is not
        loopback (unless insecure), or a timeout that is not a positive finite number."""
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ConfigError(
                f"{self.origin('timeout')}: expected a positive number of seconds, got {self.timeout}"
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
        for setting, url in (
            ("base_url", self.base_url),
            ("dashboards_url", self.dashboards_url),
        ):
            if not url:
                raise ConfigError(f"no API URL: set {self.origin(setting)}")
            host, scheme = _url_parts(url, self.origin(setting))
            if scheme == "http" and not self.insecure and not _is_loopback(host):
                raise ConfigError(
                    f"refusing plain http:// to {host} ({self.origin(setting)}): credentials "
                    "would cross the network unencrypted; use https:// or pass --insecure"
                )


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _url_parts(url: str, origin: str) -> tuple[str, str]:
    """Return a URL's host and scheme; a URL the client could not use is a ``ConfigError``."""

    def bad(why: str) -> ConfigError:
        return ConfigError(f"{origin}: {url!r} is not a usable URL: {why}")

    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number from 0 to 65535
        httpx.URL(url)
    except ValueError as exc:  # httpx.InvalidURL is a ValueError too
        raise bad(str(exc).rstrip(".")) from None
    if parts.scheme not in ("http", "https"):
        raise bad("expected http:// or https://")
    if not parts.hostname:
        raise bad("no host")
    if port == 0:
        raise bad("port 0")
    if any(c.isspace() for c in url):
        raise bad("it contains white space")
    return parts.hostname, parts.scheme


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_context(config: ApiConfig) -> ssl.SSLContext:
    """Return the one TLS context both interfaces share.

    Loading the CA bundle costs ~25 ms, and httpx would do it once per client; with plain
    http on both URLs (loopback or ``--insecure``) no TLS is ever spoken, so the context is a
    bare one that loads nothing and would refuse every certificate (it fails closed).
    """
    if any(urlsplit(url).scheme == "https" for url in (config.base_url, config.dashboards_url)):
        return httpx.create_ssl_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
