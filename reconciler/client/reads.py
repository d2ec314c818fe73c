"""The one read layer: one function per kind of GET, shared by plan, apply and the views.

The fetcher (``live``) reads through these in bulk for a plan; saved-plan stale checks and
apply's re-reads after a lost answer use them one object at a time; ``get``/``export``/``check``
(``reconciler.inventory``) use them to show live objects. Each builds its path with ``paths``,
labels errors with the resource it reads, and normalises the answer (lists keep only objects;
an object read that answers anything but an object is an ``ApiError``). Optional endpoints (the
real service's extensions: the pipe list, the organization GET, the dashboard list) raise
``Unsupported`` when the server lacks them, so each caller chooses its own fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from reconciler.client.api import Client
from reconciler.client.paths import (
    DASHBOARDS_PATH,
    PipeIds,
    backups_path,
    cdc_scaling_path,
    endpoint_path,
    endpoints_path,
    organization_path,
    pipes_path,
    services_path,
)
from reconciler.client.responses import Undecoded
from reconciler.model.errors import ApiError
from reconciler.model.json import JsonObject


def _objects(value: object) -> list[JsonObject]:
    # Decoded JSON objects are dicts already: kept as they are (no copy of a 10,000-pipe list).
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, dict) else dict(v) for v in value if isinstance(v, Mapping)]


def _object(value: object, path: str) -> JsonObject:
    if not isinstance(value, Mapping):
        raise ApiError(status=200, message="expected a JSON object", method="GET", path=path)
    return dict(value)


async def list_services(client: Client, org: str, filters: Sequence[str] = ()) -> list[JsonObject]:
    """Return the organization's services (filtered server-side by ``tag:Key[=Value]``)."""
    result = await client.get(
        services_path(org, filters), resource=f"services of organization {org}"
    )
    return _objects(result)


async def list_pipes(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return every pipe of a service (``Unsupported`` when the server has no pipe list)."""
    result = await client.get(
        pipes_path(org, service_id), resource=f"pipes of service {service_id}", optional=True
    )
    return _objects(result)


async def list_pipes_undecoded(
    client: Client, org: str, service_id: str
) -> Callable[[], list[JsonObject]]:
    """Read a service's pipe list but keep it as bytes: the returned call decodes it.

    Errors of the request are raised here, those of its body (not JSON, no envelope) by the
    call, each exactly as ``list_pipes`` raises it.
    """
    resource = f"pipes of service {service_id}"
    answer = await client.get(
        pipes_path(org, service_id), resource=resource, optional=True, decode=False
    )

    def decode() -> list[JsonObject]:
        if not isinstance(answer, Undecoded):  # decoded anyway (e.g. by a test double)
            return _objects(answer)
        try:
            return _objects(answer.payload())
        except ApiError as exc:
            raise exc.with_resource(resource) from None

    return decode


async def get_pipe(client: Client, ids: PipeIds, *, name: str) -> JsonObject:
    """Return one pipe (``name`` labels errors: ``pipe NAME``)."""
    return _object(await client.get(ids.path, resource=f"pipe {name}"), ids.path)


async def get_endpoint(client: Client, org: str, service_id: str, endpoint_id: str) -> JsonObject:
    """Return one reverse private endpoint (``NotFound`` when it does not exist)."""
    path = endpoint_path(org, service_id, endpoint_id)
    result = await client.get(path, resource=f"reverse private endpoint {endpoint_id}")
    return _object(result, path)


async def list_endpoints(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return every reverse private endpoint of a service (``Unsupported`` when the server has
    no endpoint operations)."""
    result = await client.get(
        endpoints_path(org, service_id),
        resource=f"reverse private endpoints of service {service_id}",
        optional=True,
    )
    return _objects(result)


async def get_cdc_scaling(client: Client, org: str, service_id: str) -> JsonObject:
    """Return a service's CDC scaling (``BadRequest`` while it has no database pipe)."""
    path = cdc_scaling_path(org, service_id)
    result = await client.get(path, resource=f"CDC scaling of service {service_id}", optional=True)
    return _object(result, path)


async def get_organization(client: Client, org: str, *, name: str) -> JsonObject:
    """Return the organization (``Unsupported`` when the server cannot read one)."""
    path = organization_path(org)
    result = await client.get(path, resource=f"organization {name}", optional=True)
    return _object(result, path)


async def list_dashboards(client: Client) -> list[JsonObject]:
    """Return the live dashboards (``Unsupported`` when the server cannot list them)."""
    listed = await client.dashboards(
        "GET", DASHBOARDS_PATH, resource="dashboards list", optional=True
    )
    return _objects(listed)


async def list_backups(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return a service's backups, in the server's order."""
    result = await client.get(
        backups_path(org, service_id), resource=f"backups of service {service_id}"
    )
    return _objects(result)
