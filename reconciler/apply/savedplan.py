"""Saved plans: checking that a plan made earlier still holds before applying it.

``apply --plan FILE`` re-reads every live object a changing action was computed from and
refuses the ones whose managed fields moved since planning, naming the field and both values.
A saved plan is single-use: actions it already applied (a create whose dashboard now exists, an
update the live object already shows) are reported as such and never sent again.
Secrets are not stored in plan files: they are resolved again from the manifests and must
match the fingerprints the plan recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.apply.verify import unconverged, value_at
from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.paths import PipeIds
from reconciler.model.apierrors import ApiError, AuthenticationFailed, Unsupported
from reconciler.model.cdc import CDC
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import ManifestErrors, PlanError
from reconciler.model.nesteddiff import differences, whole_lists
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.secrets import SecretTree, fingerprint, resolve_pipe_secrets, unresolved
from reconciler.plan.actions import Action, Op, Plan
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    Missing,
    content_hash,
    project,
)
from reconciler.plan.runstate import settled
from reconciler.state.document import State

__all__: list[str] = []


@dataclass
class SavedPlanCheck:
    """What re-reading a saved plan's objects found: stale actions and already applied ones."""

    stale: dict[str, str] = field(default_factory=dict)
    applied: dict[str, str] = field(default_factory=dict)

    def all_applied(self, plan: Plan) -> bool:
        """Tell whether every changing action of ``plan`` was already applied."""
        changed = [a.key for a in plan.changed]
        return bool(changed) and all(key in self.applied for key in changed)


async def find_stale(client: Client, plan: Plan, state: State | None = None) -> SavedPlanCheck:
    """Re-read each changing action's live object; report those that moved or were applied.

    A saved plan is single-use: an update whose object already shows the planned values (and
    whose secrets state already records) was applied; a dashboard create whose metadata.name
    state now binds to an id, or whose name the server now lists, was applied (or made by
    someone else: stale). Neither is sent again.
    """
    result = SavedPlanCheck()
    dashboards: list[dict[str, Any]] | None = None
    if any(a.kind == "Dashboard" and a.has_changes and a.basis is not None for a in plan.actions):
        with contextlib.suppress(Unsupported):
            dashboards = await reads.list_dashboards(client)

    async def check(action: Action) -> None:
        if not action.has_changes:
            return
        label = f"{action.kind.lower()} {action.name}"
        if action.operation in (Op.CREATE, Op.REPLACE):
            await _check_create_of(client, action, label, dashboards, state, result)
            return
        if action.basis is None:
            return
        try:
            live = await _read_live(client, action, dashboards)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            if isinstance(exc, Unsupported) and action.kind == "Organization":
                return  # an organization the server cannot read: nothing to compare
            result.stale[action.key] = f"cannot re-read {label} to check the plan: {exc}"
            return
        if live is None:
            result.stale[action.key] = (
                f"stale plan for {label}: the dashboard no longer exists; run plan again"
            )
            return
        if _shows_plan(action, live, state):
            result.applied[action.key] = (
                f"{label}: already applied (the live object shows the planned values)"
            )
            return
        moved = _moved(action, live)
        if moved is not None:
            result.stale[action.key] = (
                f"stale plan for {label}: {moved or 'live object changed'} since planning; "
                "run plan again"
            )

    await asyncio.gather(*(check(a) for a in plan.actions))
    return result


async def _check_create_of(
    client: Client,
    action: Action,
    label: str,
    dashboards: list[dict[str, Any]] | None,
    state: State | None,
    result: SavedPlanCheck,
) -> None:
    """Check a create (or replacement) of any kind: was it applied, or made by someone else."""
    if action.kind == "Pipe":
        await _check_pipe_create(client, action, label, state, result)
    elif action.kind == ENDPOINT:
        _check_endpoint_create(action, label, state, result)
    else:
        _check_create(action, label, dashboards, state, result)


async def _read_live(
    client: Client, action: Action, dashboards: list[dict[str, Any]] | None
) -> Mapping[str, Any] | None:
    """Re-read the live object an update was planned against (a dashboard: None when gone)."""
    target = action.target
    if action.kind == "Pipe":
        return await reads.get_pipe(client, PipeIds.from_target(target), name=action.name)
    if action.kind == ENDPOINT:
        org, service = target["organizationId"], target["serviceId"]
        return await reads.get_endpoint(client, org, service, target["reversePrivateEndpointId"])
    if action.kind == CDC:
        return await reads.get_cdc_scaling(client, target["organizationId"], target["serviceId"])
    if action.kind == "Organization":
        return await reads.get_organization(client, target["organizationId"], name=action.name)
    return next((d for d in dashboards or [] if str(d.get("id")) == target.get("id")), None)


def _moved(action: Action, live: Mapping[str, Any]) -> str | None:
    """Say which planned-against fields moved since planning (None: none moved)."""
    now = project(live, action.basis)
    if action.kind == "Pipe" and isinstance(now, dict) and "state" in now:
        # As planned: a pipe on its way to a state is compared as that state.
        now["state"] = settled(str(now["state"]))
    if content_hash(now) == action.basis_hash:
        return None
    moved = differences(action.basis, now, lists=whole_lists, numbers_by_value=True, absent=MISSING)
    return "; ".join(
        f"{'.'.join(str(p) for p in path)} changed from {_plain(before)} to {_plain(after)}"
        for path, before, after in moved[:5]
    )


def _shows_plan(action: Action, live: Mapping[str, Any], state: State | None) -> bool:
    """Tell whether ``live`` (and state's fingerprints) already show every planned change."""
    if action.renamed_from is not None or unconverged(action, live):
        return False
    sensitive = [c for c in action.changes if c.kind is ChangeKind.SENSITIVE]
    if sensitive:
        recorded = state.fingerprints(action.key) if state is not None else {}
        return all(recorded.get(k) == v for k, v in action.secrets.items())
    return bool(action.changes)


def _check_endpoint_create(
    action: Action, label: str, state: State | None, result: SavedPlanCheck
) -> None:
    """An endpoint create was applied once state records an endpoint for it (another id than
    the one it replaces): never created twice from one saved plan."""
    basis = action.basis if isinstance(action.basis, Mapping) else {}
    record = state.record_of(ENDPOINT, action.name) if state is not None else None
    if (
        record is not None
        and record.id
        and record.id not in (basis.get("id"), basis.get("recorded"))
    ):
        result.applied[action.key] = (
            f"{label}: already applied (state records reverse private endpoint {record.id})"
        )


def _check_create(
    action: Action,
    label: str,
    dashboards: list[dict[str, Any]] | None,
    state: State | None,
    result: SavedPlanCheck,
) -> None:
    """A create is stale once its dashboard exists: by the id state records, or by name."""
    basis = action.basis if isinstance(action.basis, Mapping) else {}
    planned_id = basis.get("id")
    record = state.dashboard(action.name) if state is not None else None
    if record is not None and record.id and record.id != planned_id:
        result.applied[action.key] = (
            f"{label}: already applied (state records dashboard {record.id} for it)"
        )
        return
    name = basis.get("name", action.target.get("name"))
    for item in dashboards or []:
        if name is not None and item.get("name") == name and str(item.get("id")) != planned_id:
            result.stale[action.key] = (
                f"stale plan for {label}: a dashboard named {name!r} now exists "
                f"(id {item.get('id')}), not recorded in this state; run plan again"
            )
            return


async def _check_pipe_create(
    client: Client, action: Action, label: str, state: State | None, result: SavedPlanCheck
) -> None:
    """A pipe create is applied once state records another id for it, and stale once a pipe
    of its name (other than the one it replaces) is listed in its service."""
    basis = action.basis if isinstance(action.basis, Mapping) else {}
    planned_id = basis.get("id")
    record = state.record_of("Pipe", action.name) if state is not None else None
    if record is not None and record.id and record.id != planned_id:
        result.applied[action.key] = f"{label}: already applied (state records pipe {record.id})"
        return
    try:
        listed = await reads.list_pipes(
            client, action.target["organizationId"], action.target["serviceId"]
        )
    except AuthenticationFailed:
        raise
    except ApiError as exc:
        result.stale[action.key] = f"cannot re-read {label}'s service to check the plan: {exc}"
        return
    for item in listed:
        if item.get("name") == basis.get("name") and str(item.get("id")) != planned_id:
            result.stale[action.key] = (
                f"stale plan for {label}: a pipe named {basis.get('name')!r} now exists "
                f"(id {item.get('id')}), not recorded in this state; run plan again"
            )
            return


def _plain(value: Any) -> str:
    return "absent" if value is MISSING else repr(value) if isinstance(value, str) else str(value)


def secrets_for_saved_plan(
    plan: Plan,
    resolved: Mapping[str, Mapping[str, SecretTree]],
    fingerprint_of: Callable[[SecretTree], str],
) -> dict[str, dict[JsonPath, SecretTree]]:
    """Match each saved sensitive change with the secret resolved now; refuse a changed secret."""
    out: dict[str, dict[JsonPath, SecretTree]] = {}
    for action in plan.actions:
        for change in action.changes:
            if change.kind is not ChangeKind.SENSITIVE or not action.has_changes:
                continue
            spec = resolved.get(action.key)
            if spec is None:
                raise PlanError(
                    f"{action.key}: the plan changes a secret but the manifest is no longer among {list(plan.manifest_paths)}"
                )
            value = value_at(spec, change.path)
            dotted = ".".join(str(p) for p in change.path)
            expected = action.secrets.get(dotted)
            if isinstance(value, Missing) or expected is None or fingerprint_of(value) != expected:
                raise PlanError(
                    f"{action.key}: the secret at {dotted} differs from the one the plan was made with; run plan again"
                )
            out.setdefault(action.key, {})[change.path] = value
    return out


def resolve_saved_secrets(
    plan: Plan, resources: Sequence[Resource], key: bytes
) -> dict[str, dict[JsonPath, SecretTree]]:
    """Resolve the manifests' secrets again and match them with a saved plan's fingerprints.

    Every unresolvable reference is reported at once (``ManifestErrors``); a secret that
    differs from the one the plan was made with is a ``PlanError``.
    """
    errors = unresolved(resources)
    if errors:
        raise ManifestErrors(errors)
    resolved: dict[str, Mapping[str, SecretTree]] = {
        r.key: resolve_pipe_secrets(r) for r in resources if r.kind == "Pipe"
    }
    return secrets_for_saved_plan(plan, resolved, lambda value: fingerprint(key, value))
