"""The refresh: reading, with as few requests as possible, the ``LiveSnapshot`` a plan needs.

Request count is the cost of a plan (the service allows 10 management requests per 10 s),
so the refresh reads in bulk and only what the manifests need (``Wanted``): the services
list once per organization and only when a manifest names its service; pipes through one
list call per service when the server has it (``pipereads``); the organization through its
GET when available; dashboards through their list; each reverse private endpoint once however
many pipes name it; endpoints and CDC scaling per service (``endpointreads``); and each object
``--prune`` would delete by its own GET. Endpoint lists are read first (the pipes' reader
reuses their statuses), CDC scaling after the pipes, the objects to prune last. All reads go
through the one read layer (``reads``); what they found is frozen into a ``LiveSnapshot``,
from which the planner binds and plans without another request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.endpointreads import ServiceReader
from reconciler.client.livestate import (
    LiveSnapshot,
    LiveState,
    Observed,
    RetiredNeed,
    Wanted,
)
from reconciler.client.paths import PipeIds, organization_path
from reconciler.client.pipereads import PipeReader
from reconciler.model.apierrors import ApiError, AuthenticationFailed, NotFound, Unsupported
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.json import JsonObject
from reconciler.model.resources import Resource

__all__ = ["LiveSnapshot", "Observed", "Wanted", "refresh"]

NO_DASHBOARDS_TOKEN = (
    "no dashboards token: set RECONCILE_DASHBOARDS_TOKEN or pass --dashboards-token"
)


async def refresh(
    client: Client, wanted: Wanted, progress: Callable[[int], None] | None = None
) -> LiveSnapshot:
    """Read what ``wanted`` names and return it as one immutable snapshot."""
    tick = progress or (lambda n: None)
    live = LiveState()
    services = ServiceReader(client, live, tick)
    await services.endpoints(wanted.endpoints)
    await asyncio.gather(
        PipeReader(client, live, tick).read(wanted.pipes),
        _organizations(client, live, wanted.organizations, tick),
        _dashboards(client, live, tick) if wanted.dashboards else _nothing(),
    )
    await services.cdc(wanted.cdc)
    for need in wanted.retired:  # one at a time, after the rest: a prune is rare and small
        live.retired[need.key] = await _retired(client, need)
    return live.snapshot(frozenset(client.health.refused_organizations))


async def _organizations(
    client: Client, live: LiveState, orgs: tuple[Resource, ...], tick: Callable[[int], None]
) -> None:
    """Read each Organization manifest's organization (none kept where it cannot be read)."""

    async def one(resource: Resource) -> None:
        org = str(resource.spec.get("organizationId"))
        path = organization_path(org)
        if live.capabilities.organization_get is False:
            return
        try:
            found = await reads.get_organization(client, org, name=resource.name)
        except Unsupported:
            live.can(organization_get=False)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            live.organizations[resource.key] = Observed(error=str(exc), path=path)
        else:
            live.can(organization_get=True)
            tick(1)
            live.organizations[resource.key] = Observed(live=found, path=path)

    await asyncio.gather(*(one(r) for r in orgs))


async def _dashboards(client: Client, live: LiveState, tick: Callable[[int], None]) -> None:
    """Read the dashboard list (or say why there is none)."""
    if not client.config.dashboards_token:
        live.dashboards_error = NO_DASHBOARDS_TOKEN
        return
    try:
        listed = await reads.list_dashboards(client)
    except Unsupported:
        live.can(dashboards_list=False)
        live.notes.append(
            "the server has no dashboard list: dashboards are tracked through the state file"
        )
        return
    except AuthenticationFailed:  # the run stops: never one resource's error
        raise
    except ApiError as exc:
        # Reported on each dashboard; pipes and organizations are still planned.
        live.dashboards_error = str(exc)
        return
    tick(1)
    live.can(dashboards_list=True)
    live.dashboards = listed


async def _retired(client: Client, need: RetiredNeed) -> JsonObject | str | None:
    """Read an object ``--prune`` may delete: it, None when already gone, or the error."""
    org, service = need.organization_id, need.service_id
    try:
        if need.kind == ENDPOINT:
            return await reads.get_endpoint(client, org, service, need.id)
        return await reads.get_pipe(client, PipeIds(org, service, need.id), name=need.name)
    except NotFound:
        return None
    except AuthenticationFailed:  # the run stops: never one resource's error
        raise
    except ApiError as exc:
        return str(exc)


async def _nothing() -> None:
    return None
