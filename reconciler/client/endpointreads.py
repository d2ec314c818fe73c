"""Reading what a plan's per-service manifests need: reverse private endpoints, CDC scaling.

Services named by ``spec.service`` are resolved through one services list per organization
(shared with the pipes' reader); then each service's endpoints are read with one list
request, however many manifests name it, and a CDC scaling manifest's service with one GET,
through the one read layer (``reads``). Which live endpoint a manifest is bound to is decided
by the planner from these lists (``identity.bind``, by description).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.livestate import LiveState, ServiceCdc, ServiceEndpoints
from reconciler.model.apierrors import ApiError, AuthenticationFailed, BadRequest, Unsupported
from reconciler.model.identity import find_service
from reconciler.model.json import JsonObject
from reconciler.model.resources import Resource

__all__: list[str] = []


class ServiceReader:
    """Reads the live state of per-service manifests through ``client`` into ``live``."""

    def __init__(self, client: Client, live: LiveState, progress: Callable[[int], None]) -> None:
        self.client = client
        self.live = live
        self.progress = progress

    async def services(self, manifests: Sequence[Resource]) -> dict[str, tuple[str, str] | str]:
        """Return (organization, service id) of each manifest by key, or why it has none; a
        services list is read once per organization and kept in ``live`` for the pipes' reader."""
        client, live, progress = self.client, self.live, self.progress
        services: dict[str, tuple[str, str] | str] = {}
        by_org: dict[str, list[Resource]] = {}
        for resource in manifests:
            org = str(resource.spec.get("organizationId", ""))
            if "serviceId" in resource.spec:
                services[resource.key] = (org, str(resource.spec["serviceId"]))
            else:
                by_org.setdefault(org, []).append(resource)

        async def resolve(org: str, members: list[Resource]) -> None:
            listed = live.services.get(org)
            if listed is None:
                try:
                    listed = await reads.list_services(client, org)
                except AuthenticationFailed:  # the run stops: never one resource's error
                    raise
                except ApiError as exc:
                    services.update({r.key: str(exc) for r in members})
                    return
                progress(1)
                live.services[org] = listed
            for resource in members:
                name = str(resource.spec.get("service"))
                found = find_service(listed, name, org, instead="use serviceId")
                services[resource.key] = (
                    found if isinstance(found, str) else (org, str(found["id"]))
                )

        await asyncio.gather(*(resolve(org, members) for org, members in by_org.items()))
        return services

    async def endpoints(self, manifests: Sequence[Resource]) -> None:
        """Fill ``live.endpoints`` for each endpoint manifest of ``manifests``."""
        client, live, progress = self.client, self.live, self.progress
        services = await self.services(manifests)
        wanted = {s for s in services.values() if isinstance(s, tuple)}
        lists: dict[tuple[str, str], list[JsonObject] | str] = {}

        async def read(key: tuple[str, str]) -> None:
            try:
                lists[key] = await reads.list_endpoints(client, *key)
            except Unsupported:
                lists[key] = (
                    "the server has no reverse private endpoint operations (a server with only the "
                    "published pipe operations): endpoints cannot be managed there"
                )
                return
            except AuthenticationFailed:
                raise
            except ApiError as exc:
                lists[key] = str(exc)
                return
            progress(1)

        await asyncio.gather(*(read(key) for key in sorted(wanted)))
        for resource in manifests:
            where = services[resource.key]
            if isinstance(where, str):
                live.endpoints[resource.key] = ServiceEndpoints(error=where)
                continue
            found = lists[where]
            live.endpoints[resource.key] = (
                ServiceEndpoints(*where, error=found)
                if isinstance(found, str)
                else ServiceEndpoints(*where, listed=tuple(found))
            )

    async def cdc(self, manifests: Sequence[Resource]) -> None:
        """Fill ``live.cdc`` for each CDC scaling manifest: one GET per service."""
        client, live, progress = self.client, self.live, self.progress
        services = await self.services(manifests)

        async def read(resource: Resource) -> None:
            where = services[resource.key]
            if isinstance(where, str):
                live.cdc[resource.key] = ServiceCdc(error=where)
                return
            try:
                found = await reads.get_cdc_scaling(client, *where)
            except BadRequest as exc:
                # The service has no database pipe yet: its CDC scaling does not exist.
                live.cdc[resource.key] = ServiceCdc(*where, absent=exc.message or str(exc))
                return
            except Unsupported:
                live.cdc[resource.key] = ServiceCdc(
                    *where, error="the server has no CDC scaling operations"
                )
                return
            except AuthenticationFailed:
                raise
            except ApiError as exc:
                live.cdc[resource.key] = ServiceCdc(*where, error=str(exc))
                return
            progress(1)
            live.cdc[resource.key] = ServiceCdc(*where, live=found)

        await asyncio.gather(*(read(r) for r in manifests))
