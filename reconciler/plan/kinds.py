"""Planning one resource of each kind from a refresh's snapshot and its binding (no request).

A pipe is planned from what ``pipebinding.observe_pipes`` saw of it (an update, create or
replace by its binding; an adopted pipe is this tool's own only when a lost create of this
tool made it); an organization from its read, or the values recorded at the last apply where
the server cannot read one; a dashboard from its binding (``bindings.bind_dashboards``); an
endpoint from its service's list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from reconciler.client.livestate import LiveSnapshot, Observed
from reconciler.client.paths import organization_path
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import ManifestError
from reconciler.model.identity import Binding, Bound, Record
from reconciler.model.json import JsonMapping
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree, resolve_pipe_secrets
from reconciler.plan.actions import Action, Op, error_action
from reconciler.plan.bindings import held_warnings
from reconciler.plan.dashboards import plan_dashboard
from reconciler.plan.diff import SecretCheck
from reconciler.plan.endpoints import plan_endpoint_manifest
from reconciler.plan.lifecycle import made_by_lost_create, plan_create
from reconciler.plan.pipebinding import PipeSeen
from reconciler.plan.planners import plan_organization, plan_pipe
from reconciler.plan.runstate import after_create
from reconciler.state.document import State

__all__: list[str] = []


def plan_other(
    resource: Resource,
    snapshot: LiveSnapshot,
    state: State,
    bindings: Mapping[str, Binding],
    *,
    replace: bool,
) -> Action:
    """Plan a resource that is neither a pipe nor a CDC scaling manifest."""
    if resource.kind == ENDPOINT:
        found = snapshot.endpoints.get(resource.key)
        return plan_endpoint_manifest(resource, found, state.records(ENDPOINT), {}, replace=replace)
    if resource.kind == "Organization":
        observed = organization_observed(resource, snapshot, state)
        return plan_organization(resource, observed, str(resource.spec.get("organizationId")))
    if resource.kind == "Dashboard":
        return plan_bound_dashboard(resource, snapshot, bindings, replace=replace)
    where = resource.locate("metadata", "name")
    return error_action(resource.kind, resource.name, where, f"unknown kind {resource.kind}")


def organization_observed(resource: Resource, snapshot: LiveSnapshot, state: State) -> Observed:
    """Return what is known of an organization: its read, else the values last applied."""
    observed = snapshot.organizations.get(resource.key)
    if observed is not None:
        return observed
    if snapshot.capabilities.organization_get is not False:
        return Observed(error="organization was not fetched")
    recorded = state.organization_values(resource.key)
    note = (
        "the server cannot read an organization: compared with the values recorded at the last apply"
        if recorded is not None
        else "the server cannot read an organization and nothing is recorded yet: apply reads it through its first PATCH and computes the private endpoint changes from the answer"
    )
    path = organization_path(str(resource.spec.get("organizationId")))
    return Observed(live=recorded or {}, path=path, note=note, unknown=recorded is None)


def plan_bound_dashboard(
    resource: Resource,
    snapshot: LiveSnapshot,
    bindings: Mapping[str, Binding],
    *,
    replace: bool,
) -> Action:
    """Plan a dashboard from its binding."""
    where = resource.locate("metadata", "name")
    if snapshot.dashboards_error is not None:
        return error_action("Dashboard", resource.name, where, snapshot.dashboards_error)
    binding = bindings.get(resource.name, Binding(Bound.NEW))
    if binding.error is not None:
        return error_action("Dashboard", resource.name, where, binding.error)
    can_read = snapshot.capabilities.dashboards_list is True
    action = plan_dashboard(
        resource,
        binding.live,
        binding.record,
        can_read=can_read,
        can_update=can_read,
        replace=replace,
    )
    return dataclasses.replace(
        action,
        renamed_from=binding.renamed_from,
        bound=binding.how,
        warnings=(*action.warnings, *held_warnings("Dashboard", binding)),
    )


def plan_seen_pipe(seen: PipeSeen, state: State, *, replace: bool, lifecycle: bool) -> Action:
    """Plan one pipe from what the snapshot says of it: by its binding, an update, create or
    replace (``lifecycle``: the server has the state and scaling endpoints)."""
    resource, observed, ids, binding = seen.resource, seen.observed, seen.ids, seen.binding
    target = ids.as_dict() if ids else {}
    where = resource.locate("metadata", "name")
    if ids is None or observed.error is not None:
        message = observed.error or "pipe could not be located"
        return error_action("Pipe", resource.name, where, message, target)
    try:
        spec = resolve_pipe_secrets(resource)
    except ManifestError as exc:
        return error_action("Pipe", resource.name, where, str(exc), target)
    recorded = binding.record if binding is not None else None
    # A pipe created again (its recorded one is gone, or a replacement) starts afresh: its
    # secrets are all sent, so none counts as recorded.
    fresh = binding is not None and binding.how is Bound.NEW
    check = SecretCheck(
        state.key, {} if fresh else state.fingerprints(_record_key(binding, resource.key))
    )
    renamed = binding.renamed_from if binding is not None else None
    if binding is not None and binding.how is Bound.NEW:
        del target["pipeId"]
        warnings = held_warnings("Pipe", binding)
        action = plan_create(
            resource, spec, check, target=target, warnings=warnings, record=recorded
        )
        action = after_create(resource, spec, action)
    else:
        how = binding.how if binding is not None else None
        action = plan_pipe(
            resource,
            spec,
            observed,
            check,
            ids=target,
            replace=replace,
            bound=how,
            lifecycle=lifecycle,
        )
        if how is Bound.ADOPTED and observed.live is not None:
            action = _adopted(action, spec, recorded, observed.live)
    return dataclasses.replace(action, renamed_from=renamed) if renamed else action


def _adopted(
    action: Action, spec: Mapping[str, SecretTree], record: Record | None, live: JsonMapping
) -> Action:
    """Mark an adopted pipe as this tool's own only when it is the one a lost create of this
    tool made; say so when it takes the place of a recorded pipe of ours gone from the server."""
    if made_by_lost_create(spec, record, live):
        return dataclasses.replace(action, made_by_us=True)
    if record is None or not record.id or action.operation is Op.ERROR:
        return action
    note = (
        f"pipe {record.id} recorded in state no longer exists on the server; adopted pipe "
        f"{live.get('id')} of that name, which this tool did not create (--prune never deletes it)"
    )
    return dataclasses.replace(action, warnings=(*action.warnings, note))


def _record_key(binding: Binding | None, key: str) -> str:
    """Return the state address whose fingerprints a pipe compares with (its old one if renamed)."""
    if binding is not None and binding.renamed_from is not None:
        return f"Pipe/{binding.renamed_from}"
    return key
