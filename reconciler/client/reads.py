"""The one read layer: one function per kind of GET, shared by plan, apply and the views.

The fetcher (``live``) reads through these in bulk for a plan; saved-plan stale checks and
apply's re-reads after a lost answer use them one object at a time; ``get``/``export``/``check``
(``reconciler.inventory``) use them to show live objects. Each builds its path with ``paths``,
labels errors with the resource it reads, and checks the answer's shape in one place: a list
read whole (a list of the documented objects, each with its ``id`` and ``name``: ``Shape``)
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
    cdc_scaling_path,
    endpoint_path,
    endpoints_path,
    organization_path,
    pipes_path,
    schema_discovery_path,
    services_path,
)
from reconciler.client.responses import RequestRecord, Undecoded
from reconciler.model.apierrors import ApiError, MalformedAnswer
from reconciler.model.json import JsonObject
from reconciler.model.secrets import SecretTree

__all__ = [
    "discover_schema",
    "get_cdc_scaling",
    "get_endpoint",
    "get_organization",
    "get_pipe",
    "list_backups",
    "list_dashboards",
    "list_endpoints",
    "list_pipes",
    "list_services",
]


@dataclass(frozen=True)
class Shape:
    """What a read's body must be: one ``noun`` object, or (``many``) a list of them, each
    naming ``keys`` (non-empty strings).

    A list binds manifests to live objects (recorded, adopted by name, or new): one read as
    "none" would have every manifest created again, so a body that is not this shape is a
    ``MalformedAnswer`` for every resource depending on it, never an empty list.
    """

    noun: str
    keys: tuple[str, ...] = ("id", "name")
    many: bool = True


PIPES = Shape("pipes")
SERVICES = Shape("services")
DASHBOARDS = Shape("dashboards")
BACKUPS = Shape("backups", ())  # shown, never bound by
PIPE = Shape("pipe", ("id",), many=False)
ENDPOINT = Shape("reverse private endpoint", ("id",), many=False)
ORGANIZATION = Shape("organization", (), many=False)
DISCOVERY = Shape("schema discovery answer", (), many=False)
# Endpoints are bound by description, which may be empty: each item needs its id only.
ENDPOINTS = Shape("reverse private endpoints", ("id",))
CDC_SCALING = Shape("CDC scaling", (), many=False)


def _checked(value: object, record: RequestRecord, shape: Shape, resource: str) -> object:
    """Return an answer's member if it has ``shape``, else raise ``MalformedAnswer`` naming
    the request, its status and requestId, and what is wrong."""
    member = "data" if record.interface == DASHBOARDS_INTERFACE else "result"
    if shape.many:
        problem = _list_problem(value, shape.keys, member)
        what = f"a list of {shape.noun} ({problem}): nothing is bound, created or pruned from it"
    else:
        problem = _item_problem(value, shape.keys, member)
        what = f"the {shape.noun} asked for ({problem})"
    if problem is None:
        return value
    raise MalformedAnswer(
        status=record.status,
        message=f"{record.method} {record.path} answered a body that is not {what}",
        request_id=record.request_id,
        resource=resource,
        method=record.method,
        path=record.path,
    )


def _list_problem(value: object, keys: tuple[str, ...], member: str) -> str | None:
    """Say what keeps ``value`` from being a list of objects naming ``keys`` (None: nothing)."""
    if not isinstance(value, list):
        return f"`{member}` is {_kind(value)}, not a list"
    for index, item in enumerate(value):
        # The usual item first, inline (a 10,000-pipe list costs ~3 ms, not ~20).
        if type(item) is dict:
            for key in keys:
                field = item.get(key)
                if type(field) is not str or not field:
                    break
            else:
                continue
        problem = _item_problem(item, keys, f"{member}[{index}]")
        if problem is not None:
            return problem
    return None


def _item_problem(item: object, keys: tuple[str, ...], where: str) -> str | None:
    """Say what keeps ``item`` from being an object naming ``keys`` (None: nothing)."""
    if type(item) is not dict and not isinstance(item, Mapping):
        return f"`{where}` is {_kind(item)}, not an object"
    for key in keys:
        field = item.get(key)
        if field is None or field == "":
            return f"`{where}` has no `{key}`"
        if not isinstance(field, str):
            return f"`{where}.{key}` is {_kind(field)}, not a string"
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


async def _read(
    client: Client, interface: str, path: str, shape: Shape, resource: str, *, optional: bool
) -> object:
    """GET ``path`` and return its answer, checked to have ``shape``."""
    value, record = await client.call(
        interface, "GET", path, resource=resource, idempotent=True, optional=optional
    )
    return _checked(value, record, shape, resource)


def _objects(value: object) -> list[JsonObject]:
    """Return a checked list's objects (``_checked`` made sure each item is one)."""
    # Decoded JSON objects are dicts already: kept as they are (no copy of a 10,000-pipe list).
    assert isinstance(value, list)
    return [v if isinstance(v, dict) else dict(v) for v in value if isinstance(v, Mapping)]


async def _list(
    client: Client, interface: str, path: str, shape: Shape, resource: str, *, optional: bool
) -> list[JsonObject]:
    """GET a list and return its objects, read whole (see ``Shape``)."""
    return _objects(await _read(client, interface, path, shape, resource, optional=optional))


async def _object(
    client: Client, path: str, shape: Shape, resource: str, *, optional: bool = False
) -> JsonObject:
    """GET one management object, checked to have ``shape``."""
    value = await _read(client, MANAGEMENT, path, shape, resource, optional=optional)
    assert isinstance(value, Mapping)
    return dict(value)


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
            return _objects(_checked(answer, record, PIPES, resource))
        try:
            value, record = answer.payload()
        except ApiError as exc:
            raise exc.with_resource(resource) from None
        return _objects(_checked(value, record, PIPES, resource))

    return decode


async def get_pipe(client: Client, ids: PipeIds, *, name: str) -> JsonObject:
    """Return one pipe (``name`` labels errors: ``pipe NAME``)."""
    return await _object(client, ids.path, PIPE, f"pipe {name}")


async def get_endpoint(client: Client, org: str, service_id: str, endpoint_id: str) -> JsonObject:
    """Return one reverse private endpoint (``NotFound`` when it does not exist)."""
    path = endpoint_path(org, service_id, endpoint_id)
    return await _object(client, path, ENDPOINT, f"reverse private endpoint {endpoint_id}")


async def list_endpoints(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return every reverse private endpoint of a service (``Unsupported`` when the server has
    no endpoint operations)."""
    path = endpoints_path(org, service_id)
    resource = f"reverse private endpoints of service {service_id}"
    return await _list(client, MANAGEMENT, path, ENDPOINTS, resource, optional=True)


async def get_cdc_scaling(client: Client, org: str, service_id: str) -> JsonObject:
    """Return a service's CDC scaling (``BadRequest`` while it has no database pipe)."""
    path = cdc_scaling_path(org, service_id)
    resource = f"CDC scaling of service {service_id}"
    return await _object(client, path, CDC_SCALING, resource, optional=True)


async def get_organization(client: Client, org: str, *, name: str) -> JsonObject:
    """Return the organization (``Unsupported`` when the server cannot read one)."""
    path = organization_path(org)
    return await _object(client, path, ORGANIZATION, f"organization {name}", optional=True)


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


async def discover_schema(
    client: Client, org: str, service_id: str, source: Mapping[str, SecretTree], *, resource: str
) -> JsonObject:
    """Return the fields (and meta) schema discovery infers for ``source`` from its samples.

    A POST that changes nothing on the server, so it is retried like a read.
    """
    path = schema_discovery_path(org, service_id)
    result, record = await client.call(
        MANAGEMENT, "POST", path, {"source": source}, resource=resource, idempotent=True
    )
    value = _checked(result, record, DISCOVERY, resource)
    assert isinstance(value, Mapping)
    return dict(value)
