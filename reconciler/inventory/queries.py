"""One core call per read-only command: ``get backups|endpoint|pipe|pipes`` and ``check backups``.

Each function takes an open client and the organization id, resolves a service given by name
or id (a uuid costs no request), reads what the command shows, and returns plain data for the
command to render. The reads themselves are in ``reads``; the formatting in ``views``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from reconciler.client.api import Client
from reconciler.inventory.reads import (
    BackupFreshness,
    assess_backups,
    get_endpoint,
    get_pipe,
    is_uuid,
    list_backups,
    list_pipes,
    list_services,
    parse_time,
    pick_service,
    resolve_service,
)
from reconciler.model.errors import ConfigError


async def service_backups(
    client: Client, org: str, service: str, *, since: timedelta | None, now: datetime
) -> list[dict[str, Any]]:
    """Return a service's backups, newest first (only those started within ``since``)."""
    found = await resolve_service(client, org, service)
    backups = await list_backups(client, org, str(found["id"]))
    if since is None:
        return backups
    limit = now - since
    return [b for b in backups if (t := parse_time(b.get("startedAt"))) and t >= limit]


async def service_endpoint(
    client: Client, org: str, service: str, endpoint_id: str
) -> dict[str, Any]:
    """Return one reverse private endpoint of a service."""
    found = await resolve_service(client, org, service)
    return await get_endpoint(client, org, str(found["id"]), endpoint_id)


async def service_pipe(client: Client, org: str, service: str, pipe: str) -> dict[str, Any]:
    """Return one pipe of a service, given by id or by name."""
    found = await resolve_service(client, org, service)
    return await get_pipe(client, org, str(found["id"]), pipe)


async def service_pipes(client: Client, org: str, service: str) -> list[dict[str, Any]]:
    """Return every pipe of a service; a server without the pipe list is a ``ConfigError``."""
    found = await resolve_service(client, org, service)
    listed = await list_pipes(client, org, str(found["id"]))
    if listed is None:
        raise ConfigError(
            "the server does not list the pipes of a service (GET …/pipes answered 404): "
            "show one pipe by id with `reconcile get pipe ID --service …`"
        )
    return listed


async def backup_freshness(
    client: Client, org: str, services: Sequence[str], *, max_age: timedelta, now: datetime
) -> list[BackupFreshness]:
    """Assess each selected service's backups (every service when none is named)."""
    listed: list[dict[str, Any]] = []
    if not services or any(not is_uuid(r) for r in services):
        listed = await list_services(client, org)
    selected = (
        [pick_service(listed, r, org) if not is_uuid(r) else {"id": r, "name": r} for r in services]
        if services
        else listed
    )
    lists = await asyncio.gather(*(list_backups(client, org, str(s["id"])) for s in selected))
    return [assess_backups(s, b, max_age, now) for s, b in zip(selected, lists, strict=True)]
