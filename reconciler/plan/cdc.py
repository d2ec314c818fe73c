"""Planning a service's CDC scaling: one PATCH of the stated fields when they differ.

CDC scaling exists once the service has a database pipe. Before that, when the same plan
creates the service's first database pipe, the scaling is planned to be set right after it
(apply runs it after the pipes); otherwise the plan says it cannot be set yet.

This module imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace as evolve

from reconciler.client.livestate import ServiceCdc
from reconciler.client.paths import cdc_scaling_path
from reconciler.model.cdc import CDC, DATABASE_SOURCES, FIELDS
from reconciler.model.json import as_mapping
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, Purpose, Request, error_action, noop_action
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, same

__all__: list[str] = []


def plan_cdc(resource: Resource, found: ServiceCdc, creating: Iterable[str] = ()) -> Action:
    """Plan one CDC scaling manifest; ``creating`` names the pipe manifests the same plan
    creates as database pipes of its service."""
    where = resource.locate("metadata", "name")
    target = {"organizationId": found.organization_id, "serviceId": found.service_id}
    if found.error is not None:
        return error_action(CDC, resource.name, where, found.error, target)
    stated = {k: resource.spec[k] for k in FIELDS if k in resource.spec}
    live = found.live or {}
    changes = tuple(
        FieldChange((k,), live.get(k, MISSING), v, ChangeKind.SET, resource.locate_spec(k))
        for k, v in stated.items()
        if not same(v, live.get(k))
    )
    path = cdc_scaling_path(found.organization_id, found.service_id)
    basis = {k: live.get(k) for k in stated}
    patch = Request("PATCH", path, stated, purpose=Purpose.UPDATE)
    base = noop_action(CDC, resource.name, where, target, basis)
    update = evolve(base, operation=Op.UPDATE, changes=changes, requests=(patch,))
    if found.live is None:
        first = sorted(creating)
        if not first:
            message = (
                f"service {found.service_id} has no database pipe yet, so its CDC scaling does "
                f"not exist ({found.absent}); it can be set once the service has one"
            )
            return evolve(error_action(CDC, resource.name, where, message, target), changes=changes)
        warning = (
            f"the service has no database pipe yet: set after {', '.join(first)} is created "
            "(apply creates pipes first)"
        )
        return evolve(update, warnings=(warning,))
    return update if changes else base


def creates_database_pipe(action: Action, service_id: str) -> bool:
    """Tell whether a planned pipe action creates a database pipe on ``service_id``."""
    if action.kind != "Pipe" or action.operation not in (Op.CREATE, Op.REPLACE):
        return False
    if action.target.get("serviceId") != service_id:
        return False
    for request in action.requests:
        if request.purpose is Purpose.CREATE and request.body is not None:
            source = as_mapping(request.body.get("source"))
            return any(kind in DATABASE_SOURCES for kind in source)
    return False
