"""One read-only session against the live organization: the core call of ``get``, ``export``,
``check`` and ``discover``.

``read_live`` checks the organization id and the client configuration before anything is
sent, opens one client, runs the caller's read with it and closes it, so no command opens a
client itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from reconciler.client.api import ApiConfig, Client
from reconciler.model.errors import ConfigError
from reconciler.model.resources import check_default_organization

if TYPE_CHECKING:
    import httpx

__all__ = ["read_live"]


T = TypeVar("T")

NO_ORGANIZATION = "no organization: pass --organization or set RECONCILE_ORGANIZATION_ID"


async def read_live(
    config: ApiConfig,
    organization: str | None,
    fetch: Callable[[Client, str], Awaitable[T]],
    *,
    need_org: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
) -> T:
    """Run ``fetch(client, organization)`` with one client opened for it (checked first);
    ``transport`` is the client's HTTP seam (an in-process server in tests)."""
    org = organization or ""
    if need_org and not org:
        raise ConfigError(NO_ORGANIZATION)
    if org:
        check_default_organization(org)
    config.check()
    async with Client(config, transport) as client:
        return await fetch(client, org)
