"""Where and how to reach the service: its two interfaces, their rates, and the TLS context.

``ApiConfig`` is checked before anything is sent: credentials present, URLs that are http(s),
and no plain http to a host that is not loopback unless ``insecure`` says so. Both interfaces
share one TLS context (see ``tls_context``).
"""

from __future__ import annotations

import ipaddress
import math
import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from reconciler.client.budget import Rate
from reconciler.client.limits import RequestLimits
from reconciler.model.errors import ConfigError

MANAGEMENT = "management"
DASHBOARDS = "dashboards"

# The service's own limits per key: 10 management requests per 10 s, 100 dashboards per minute.
MANAGEMENT_RATE = Rate(10, 10.0)
DASHBOARDS_RATE = Rate(100, 60.0)


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


def tls_context(config: ApiConfig) -> ssl.SSLContext:
    """Return the one TLS context both interfaces share.

    Loading the CA bundle costs ~25 ms, and httpx would do it once per client; with plain
    http on both URLs (loopback or ``--insecure``) no TLS is ever spoken, so the context is a
    bare one that loads nothing and would refuse every certificate (it fails closed).
    """
    if any(urlsplit(url).scheme == "https" for url in (config.base_url, config.dashboards_url)):
        return httpx.create_ssl_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
