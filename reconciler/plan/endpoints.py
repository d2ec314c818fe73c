"""Planning reverse private endpoints: create, update of DNS mappings, replace, prune.

An endpoint manifest is bound by ``identity.bind`` (its state record, else the one live
endpoint of its service with its ``description``, else new). A new one is one POST of every
stated field; apply then waits for it to be Ready. On a live endpoint only
``customPrivateDnsMappings`` can change (one PATCH of the whole list); any other difference
needs ``--replace`` (DELETE, then the POST), refused while a pipe manifest of the run uses the
endpoint (the service refuses to delete an endpoint a pipe names). Prune deletes only
endpoints this tool created whose manifest is gone.

This module imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace as evolve
from typing import Any

from reconciler.client.livestate import ServiceEndpoints
from reconciler.client.paths import endpoint_path, endpoints_path
from reconciler.model.endpoints import CREATE_TIME, ENDPOINT, FAILED_STATUSES, READY, WRITABLE
from reconciler.model.errors import Location
from reconciler.model.identity import Binding, Bound, Identities, Listed, Record, bind
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.model.resources import Resource
from reconciler.plan.actions import (
    Action,
    Op,
    Purpose,
    Request,
    error_action,
    noop_action,
    prune_action,
    replacing,
)
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, content_hash, same

__all__: list[str] = []


ID_KEY = "reversePrivateEndpointId"


def bind_endpoint(
    resource: Resource,
    found: ServiceEndpoints,
    record: Record | None,
    held: Mapping[str, str],
) -> Binding:
    """Bind one endpoint manifest: its record, else adopted by description, else new."""
    return bind(
        name=str(resource.spec.get("description")),
        pinned=None,
        record=record,
        listed=Listed.of(found.listed, "description"),
        held=held,
        owner=resource.name,
        kind_label="reverse private endpoint",
    )


def plan_endpoint_manifest(
    resource: Resource,
    found: ServiceEndpoints | None,
    records: Mapping[str, Record],
    users: Mapping[str, frozenset[str]],
    *,
    replace: bool = False,
) -> Action:
    """Bind and plan one endpoint manifest: ``records`` are the state's endpoint records by
    ``metadata.name``, ``users`` what each pipe manifest names (``endpoint_users``)."""
    if found is None:
        where = resource.locate("metadata", "name")
        return error_action(ENDPOINT, resource.name, where, "endpoint was not fetched")
    identities = Identities(records, {})
    binding = bind_endpoint(resource, found, identities.record(resource.name), identities.held)
    used_by = tuple(
        pipe for pipe, names in users.items() if binding.id in names or resource.name in names
    )
    return plan_endpoint(resource, found, binding, replace=replace, used_by=used_by)


def create_body(spec: JsonMapping) -> dict[str, JsonLike]:
    """Return the POST body of an endpoint: every stated field of the contract's create."""
    return {k: spec[k] for k in (*CREATE_TIME, WRITABLE) if k in spec}


def plan_endpoint(
    resource: Resource,
    found: ServiceEndpoints,
    binding: Binding,
    *,
    replace: bool = False,
    used_by: Sequence[str] = (),
) -> Action:
    """Plan one endpoint; ``used_by`` names the pipe manifests of the run that use it."""
    where = resource.locate("metadata", "name")
    target = {"organizationId": found.organization_id, "serviceId": found.service_id}
    if found.error is not None or binding.error is not None:
        message = str(found.error or binding.error)
        return error_action(ENDPOINT, resource.name, where, message, target)
    spec = resource.spec
    live = binding.live
    if binding.how is Bound.NEW or live is None:
        return _create(resource, target, binding)
    ident = str(binding.id)
    target[ID_KEY] = ident
    path = endpoint_path(found.organization_id, found.service_id, ident)
    reasons = [
        FieldChange((k,), live.get(k, MISSING), spec.get(k, MISSING), ChangeKind.REPLACE, at)
        for k in CREATE_TIME
        for at in [resource.locate_spec(k)]
        if not same(spec.get(k), live.get(k))
    ]
    basis = {"id": ident, **{k: live.get(k) for k in (*CREATE_TIME, WRITABLE) if k in spec}}
    base = noop_action(
        ENDPOINT,
        resource.name,
        where,
        target,
        basis,
        bound=binding.how,
        warnings=_status_warnings(live),
    )
    if reasons:
        return _replacement(resource, base, reasons, path, binding, replace, used_by)
    if WRITABLE in spec and not same(spec[WRITABLE], live.get(WRITABLE, [])):
        change = FieldChange(
            (WRITABLE,),
            live.get(WRITABLE, MISSING),
            spec[WRITABLE],
            ChangeKind.SET,
            resource.locate_spec(WRITABLE),
        )
        patch = Request("PATCH", path, {WRITABLE: spec[WRITABLE]}, purpose=Purpose.UPDATE)
        return evolve(base, operation=Op.UPDATE, changes=(change,), requests=(patch,))
    return base


def _create(resource: Resource, target: Mapping[str, str], binding: Binding) -> Action:
    body = create_body(resource.spec)
    changes = tuple(
        FieldChange((k,), MISSING, v, ChangeKind.SET, resource.locate_spec(k))
        for k, v in body.items()
    )
    post = Request(
        "POST",
        endpoints_path(target["organizationId"], target["serviceId"]),
        body,
        idempotent=False,
        purpose=Purpose.CREATE,
    )
    record = binding.record
    basis = {"id": None, "description": body.get("description"), "serviceId": target["serviceId"]}
    if record is not None and record.id:
        basis["recorded"] = record.id  # gone from the server: a saved plan tells it from a new one
    gone = (
        (
            f"reverse private endpoint {record.id} recorded in state no longer exists; creating it again",
        )
        if record is not None and record.id
        else ()
    )
    return Action(
        ENDPOINT,
        resource.name,
        Op.CREATE,
        resource.locate("metadata", "name"),
        changes=changes,
        requests=(post,),
        warnings=(*gone, "apply waits for the new endpoint to be Ready (--wait-timeout)"),
        target=dict(target),
        basis=basis,
        basis_hash=content_hash(basis),
        bound=Bound.NEW,
    )


def _replacement(
    resource: Resource,
    base: Action,
    reasons: list[FieldChange],
    path: str,
    binding: Binding,
    replace: bool,
    used_by: Sequence[str],
) -> Action:
    ident = base.target[ID_KEY]
    what = "; ".join(f"{c.dotted}: {_show(c.old)} → {_show(c.new)}" for c in reasons)
    head = f"must be replaced ({what}): only customPrivateDnsMappings can change on an endpoint"
    if not replace:
        message = f"{head} ({reasons[0].location}); pass --replace to delete it and create it again"
        return evolve(base, operation=Op.ERROR, changes=tuple(reasons), errors=(message,))
    if used_by:
        message = (
            f"{head}, but {', '.join(used_by)} use(s) it: an endpoint a pipe uses is never "
            "replaced; point the pipe(s) at another endpoint first"
        )
        return evolve(base, operation=Op.ERROR, changes=tuple(reasons), errors=(message,))
    created = _create(resource, {k: v for k, v in base.target.items() if k != ID_KEY}, binding)
    delete = Request("DELETE", path, None, purpose=Purpose.DELETE_FOR_REPLACE)
    warning = (
        f"replaces reverse private endpoint {ident}: it is deleted and created again with a "
        "new id (pipes naming it by id must be changed)"
    )
    return replacing(
        created, reasons, delete, warning, basis=base.basis, bound=binding.how, target=base.target
    )


def plan_endpoint_prune(
    name: str, record: Record, live: JsonMapping | None, location: Location
) -> Action:
    """Plan the deletion of an endpoint this tool created whose manifest is gone."""
    scope = record.scope or {}
    org, service, ident = (
        scope.get("organizationId", ""),
        scope.get("serviceId", ""),
        record.id or "",
    )
    request = Request("DELETE", endpoint_path(org, service, ident), None, purpose=Purpose.DELETE)
    shown = f"{ident} ({live.get('description')})" if live else ident
    return prune_action(
        ENDPOINT,
        name,
        location,
        removed=("endpoint", shown),
        delete=request,
        warning="manifest removed: deletes the reverse private endpoint this tool created",
        target={"organizationId": org, "serviceId": service, ID_KEY: ident},
        basis={"id": ident},
    )


def _status_warnings(live: JsonMapping) -> tuple[str, ...]:
    status = str(live.get("status", ""))
    if status == READY or not status:
        return ()
    if status in FAILED_STATUSES:
        return (f"the endpoint is {status}: pipes cannot use it; --replace creates it again",)
    return (f"the endpoint is {status}, not Ready yet",)


def _show(value: Any) -> str:
    return "absent" if value is MISSING else str(value)
