"""The one read layer: one function per kind of GET, shared by plan, apply and the views.

The fetcher (``live``) reads through these in bulk for a plan; saved-plan stale checks and
apply's re-reads after a lost answer use them one object at a time; ``get``/``export``/``check``
(``reconciler.inventory``) use them to show live objects. Each builds its path with ``paths``,
labels errors with the resource it reads, and checks the answer's shape in one place: a list
read whole (a list of the documented objects, each with its ``id`` and ``name``: ``Listing``)
or an object read that answers an object, else a ``MalformedAnswer`` naming the request, its
status and requestId and what was wrong, exactly as a body that is not JSON is. Optional endpoints (the
real service's extensions: the pipe list, the organization GET, the dashboard list) raise
``Unsupported`` when the server lacks them, so each caller chooses its own fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.client.api import Client
from reconciler.client.config import DASHBOARDS as DASHBOARDS_INTERFACE
from reconciler.client.config import MANAGEMENT
from reconciler.client.paths import (
    DASHBOARDS_PATH,
    PipeIds,
    backups_path,
    endpoint_path,
    organization_path,
    pipes_path,
    services_path,
)
from reconciler.client.responses import RequestRecord, Undecoded
from reconciler.model.errors import ApiError, MalformedAnswer
from reconciler.model.json import JsonObject


@dataclass(frozen=True)
class Listing:
    """What a list read's body must be: a list of ``noun`` objects, each naming ``keys``.

    A list binds manifests to live objects (recorded, adopted by name, or new): one read as
    "none" would have every manifest created again, so a body that is not this shape is a
    ``MalformedAnswer`` for every resource depending on it, never an empty list.
    """

    noun: str
    keys: tuple[str, ...] = ("id", "name")


PIPES = Listing("pipes")
SERVICES = Listing("services")
DASHBOARDS = Listing("dashboards")
BACKUPS = Listing("backups", ("id",))


def _listed(
    value: object, record: RequestRecord, listing: Listing, resource: str
) -> list[JsonObject]:
    """Return a list answer's objects, or raise ``MalformedAnswer`` saying what is wrong."""
    member = "data" if record.interface == DASHBOARDS_INTERFACE else "result"
    problem = _shape_problem(value, listing, member)
    if problem is not None:
        raise MalformedAnswer(
            status=record.status,
            message=f"{record.method} {record.path} answered a body that is not a list of "
            f"{listing.noun} ({problem}): nothing is bound, created or pruned from it",
            request_id=record.request_id,
            resource=resource,
            method=record.method,
            path=record.path,
        )
    # Decoded JSON objects are dicts already: kept as they are (no copy of a 10,000-pipe list).
    assert isinstance(value, list)
    return [v if isinstance(v, dict) else dict(v) for v in value]


def _shape_problem(value: object, listing: Listing, member: str) -> str | None:
    """Say what keeps ``value`` from being a list of ``listing``'s objects (None: nothing)."""
    if not isinstance(value, list):
        return f"`{member}` is {_kind(value)}, not a list"
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            return f"`{member}[{index}]` is {_kind(item)}, not an object"
        for key in listing.keys:
            field = item.get(key)
            if field is None or field == "":
                return f"`{member}[{index}]` has no `{key}`"
            if not isinstance(field, str):
                return f"`{member}[{index}].{key}` is {_kind(field)}, not a string"
    return None


# The JSON types a message names (bool before the numbers: a bool is an int).
_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    (Mapping, "an object"),
    (list, "a list"),
    (str, "a string"),
    ((int, float), "a number"),
)


def _kind(value: object) -> str:
    """Name a decoded JSON value's type as a message says it (``null``, ``an object`` ...)."""
    if value is None:
        return "null"
    return next((name for kind, name in _KINDS if isinstance(value, kind)), type(value).__name__)


def _object(value: object, path: str) -> JsonObject:
    if not isinstance(value, Mapping):
        raise MalformedAnswer(status=200, message="expected a JSON object", method="GET", path=path)
    return dict(value)


async def _list(
    client: Client, interface: str, path: str, listing: Listing, resource: str, *, optional: bool
) -> list[JsonObject]:
    """GET a list and return its objects, read whole (see ``Listing``)."""
    value, record = await client.call(
        interface, "GET", path, resource=resource, idempotent=True, optional=optional
    )
    return _listed(value, record, listing, resource)


async def list_services(client: Client, org: str, filters: Sequence[str] = ()) -> list[JsonObject]:
    """Return the organization's services (filtered server-side by ``tag:Key[=Value]``)."""
    resource = f"services of organization {org}"
    path = services_path(org, filters)
    return await _list(client, MANAGEMENT, path, SERVICES, resource, optional=False)


async def list_pipes(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return every pipe of a service (``Unsupported`` when the server has no pipe list)."""
    resource = f"pipes of service {service_id}"
    path = pipes_path(org, service_id)
    return await _list(client, MANAGEMENT, path, PIPES, resource, optional=True)


async def list_pipes_undecoded(
    client: Client, org: str, service_id: str
) -> Callable[[], list[JsonObject]]:
    """Read a service's pipe list but keep it as bytes: the returned call decodes it.

    Errors of the request are raised here, those of its body (not JSON, no envelope, not a
    list of pipes) by the call, each exactly as ``list_pipes`` raises it.
    """
    resource = f"pipes of service {service_id}"
    path = pipes_path(org, service_id)
    answer = await client.get(path, resource=resource, optional=True, decode=False)

    def decode() -> list[JsonObject]:
        if not isinstance(answer, Undecoded):  # decoded anyway (e.g. by a test double)
            record = RequestRecord(MANAGEMENT, "GET", path, 200, None, 1)
            return _listed(answer, record, PIPES, resource)
        try:
            value, record = answer.payload()
        except ApiError as exc:
            raise exc.with_resource(resource) from None
        return _listed(value, record, PIPES, resource)

    return decode


async def get_pipe(client: Client, ids: PipeIds, *, name: str) -> JsonObject:
    """Return one pipe (``name`` labels errors: ``pipe NAME``)."""
    return _object(await client.get(ids.path, resource=f"pipe {name}"), ids.path)


async def get_endpoint(client: Client, org: str, service_id: str, endpoint_id: str) -> JsonObject:
    """Return one reverse private endpoint (``NotFound`` when it does not exist)."""
    path = endpoint_path(org, service_id, endpoint_id)
    result = await client.get(path, resource=f"reverse private endpoint {endpoint_id}")
    return _object(result, path)


async def get_organization(client: Client, org: str, *, name: str) -> JsonObject:
    """Return the organization (``Unsupported`` when the server cannot read one)."""
    path = organization_path(org)
    result = await client.get(path, resource=f"organization {name}", optional=True)
    return _object(result, path)


async def list_dashboards(client: Client) -> list[JsonObject]:
    """Return the live dashboards (``Unsupported`` when the server cannot list them)."""
    return await _list(
        client, DASHBOARDS_INTERFACE, DASHBOARDS_PATH, DASHBOARDS, "dashboards list", optional=True
    )


async def list_backups(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return a service's backups, in the server's order."""
    resource = f"backups of service {service_id}"
    path = backups_path(org, service_id)
    return await _list(client, MANAGEMENT, path, BACKUPS, resource, optional=False)
