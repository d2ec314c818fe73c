"""Planning dashboards: create, update in place, replace, prune, or say why not.

A dashboard becomes a create, an in-place update (PUT), a replacement or a warning, depending
on what the server can do (list and update, or only create) and what the state file remembers
(the id created for each ``metadata.name`` and the hash of the content sent). Where the server
lists dashboards, one with the same display name is adopted rather than created twice; where it
does not, the state file is all there is, and an earlier create whose answer was lost is an
error until the user confirms with ``--replace``. Prune deletes only what this tool created.

This module imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace as evolve
from typing import Any

from reconciler.client.config import DASHBOARDS
from reconciler.client.paths import DASHBOARDS_PATH, dashboard_path
from reconciler.model.errors import Location
from reconciler.model.json import JsonMapping
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, Purpose, Request
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    FieldChange,
    content_hash,
    dashboard_content,
    diff_dashboard,
)
from reconciler.state.document import DashboardRecord

__all__: list[str] = []


_NO_PUT = "not updatable through this API (the server offers no PUT)"
_ONLY_CREATE = (
    "changed, but not updatable through this API (the server offers only create); "
    "pass --replace to create a new one"
)
_LOST_CREATE = (
    "an earlier create of this dashboard may have succeeded (the answer was lost) and the server "
    "cannot be listed to check; look for it in the service, then run apply with --replace to "
    "create it anyway"
)


def plan_dashboard(
    resource: Resource,
    live: JsonMapping | None,
    record: DashboardRecord | None,
    *,
    can_read: bool,
    can_update: bool,
    replace: bool,
) -> Action:
    """Plan one dashboard; ``live`` is the matching live dashboard when the server can list them.

    Every action names the display name in its target, and a create or replace carries its
    basis too (the id it replaces, or none), so a saved plan can tell it was already applied.
    """
    content = dashboard_content(resource.spec)
    base = Action(
        "Dashboard",
        resource.name,
        Op.NOOP,
        resource.locate("metadata", "name"),
        content_hash=content_hash(content),
    )
    if can_read:
        action = _listed(resource, base, content, live, record, can_update=can_update)
    else:
        action = _recorded(resource, base, content, record, replace=replace)
    target = {**action.target, "name": str(resource.spec.get("name") or resource.name)}
    if action.operation in (Op.CREATE, Op.REPLACE):
        basis = {"id": target.get("id"), "name": target["name"]}
        return evolve(action, target=target, basis=basis, basis_hash=content_hash(basis))
    return evolve(action, target=target)


def _create(resource: Resource, base: Action, content: JsonMapping, **fields: Any) -> Action:
    request = Request(
        "POST", DASHBOARDS_PATH, content, DASHBOARDS, idempotent=False, purpose=Purpose.CREATE
    )
    changes = tuple(
        FieldChange((k,), MISSING, v, ChangeKind.SET, resource.locate_spec(k))
        for k, v in content.items()
    )
    return evolve(base, **{"operation": Op.CREATE, **fields}, requests=(request,), changes=changes)


def _listed(
    resource: Resource,
    base: Action,
    content: JsonMapping,
    live: JsonMapping | None,
    record: DashboardRecord | None,
    *,
    can_update: bool,
) -> Action:
    """The server lists dashboards: create, adopt, update in place, or warn."""
    if live is None:
        warnings: tuple[str, ...] = ()
        if record is not None and record.id:
            warnings = (
                f"dashboard {record.id} recorded in state no longer exists on the server; creating it again",
            )
        return _create(resource, base, content, warnings=warnings)
    target = {"id": str(live.get("id"))}
    changes = tuple(diff_dashboard(resource, live))
    basis = {k: live[k] for k in ("name", "tiles", "tags") if k in live}
    if not changes:
        return evolve(base, target=target, basis=basis, basis_hash=content_hash(basis))
    drift: tuple[str, ...] = ()
    if record is not None and record.content_hash:
        live_hash = content_hash(_strip_ids(basis))
        if live_hash != record.content_hash and record.content_hash == base.content_hash:
            drift = ("changed on the server since the last apply (server-side drift)",)
    if not can_update:
        return evolve(base, target=target, changes=changes, warnings=(*drift, _NO_PUT))
    put = Request("PUT", dashboard_path(target["id"]), content, DASHBOARDS, purpose=Purpose.UPDATE)
    return evolve(
        base,
        operation=Op.UPDATE,
        target=target,
        changes=changes,
        requests=(put,),
        warnings=drift,
        basis=basis,
        basis_hash=content_hash(basis),
    )


def _recorded(
    resource: Resource,
    base: Action,
    content: JsonMapping,
    record: DashboardRecord | None,
    *,
    replace: bool,
) -> Action:
    """No list endpoint: the state file is all we know."""
    if record is None or not record.id:
        if record is not None and record.uncertain and not replace:
            return evolve(base, operation=Op.ERROR, errors=(_LOST_CREATE,))
        return _create(resource, base, content)
    target = {"id": record.id}
    if record.content_hash == base.content_hash:
        return evolve(base, target=target)
    if replace:
        return _create(
            resource,
            base,
            content,
            operation=Op.REPLACE,
            target=target,
            warnings=(f"creates a new dashboard; the old one ({record.id}) is left in place",),
        )
    return evolve(base, target=target, warnings=(_ONLY_CREATE,))


def plan_prune(
    name: str, record: DashboardRecord, *, can_delete: bool, location: Location
) -> Action:
    """Plan the deletion of a dashboard this tool created whose manifest was removed."""
    base = Action("Dashboard", name, Op.DELETE, location, target={"id": record.id or ""})
    if not can_delete or not record.id:
        return evolve(
            base,
            operation=Op.NOOP,
            warnings=("manifest removed, but the server offers no DELETE; left in place",),
        )
    request = Request("DELETE", dashboard_path(record.id), None, DASHBOARDS, purpose=Purpose.DELETE)
    return evolve(
        base,
        requests=(request,),
        changes=(FieldChange(("dashboard",), record.id, MISSING, ChangeKind.REMOVE, location),),
    )


def _strip_ids(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [_strip_ids(v) for v in value]
    return value
