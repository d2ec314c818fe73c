"""The planning engine: from desired resources, a client and a state to a plan.

This is the one impure step between the pure pieces: it fetches live state through the API
client, resolves secret references, reads the state file's records and hands everything to
the pure planner, resource by resource. Secret references are checked before the first
request (every unresolvable one is reported at once and nothing is sent); an error on one
resource (an API failure) becomes an error action for that resource; the others are still
planned.
``reconciler.plan.run.compute_plan`` wraps it as the whole of ``reconcile plan``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.client.api import Client
from reconciler.client.live import Fetcher, LiveState, Observed
from reconciler.model.cdc import CDC
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import ManifestError, ManifestErrors
from reconciler.model.identity import Binding, Bound, Record
from reconciler.model.json import JsonMapping
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree, resolve_pipe_secrets, unresolved
from reconciler.plan.actions import Action, Op, Plan, error_action
from reconciler.plan.bindings import (
    bind_dashboards,
    display_name,
    held_warnings,
    pipe_identities,
    prune_dashboards,
    prune_endpoints,
    prune_partial,
    prune_pipes,
    retired_note,
    run_files,
)
from reconciler.plan.cdc import creates_database_pipe, plan_cdc
from reconciler.plan.dashboards import plan_dashboard
from reconciler.plan.diff import SecretCheck
from reconciler.plan.endpointrefs import endpoint_users, named_endpoints, refer
from reconciler.plan.endpoints import plan_endpoint_manifest
from reconciler.plan.lifecycle import made_by_lost_create, plan_create
from reconciler.plan.planners import plan_organization, plan_pipe
from reconciler.plan.runstate import after_create
from reconciler.plan.targets import matches_target, select_actions, select_targets
from reconciler.state.document import State

__all__ = [
    "PlanOptions",
    "bind_dashboards",
    "display_name",
    "matches_target",
    "plan_resources",
    "select_actions",
    "select_targets",
]


@dataclass(frozen=True)
class PlanOptions:
    """Choices that change what a plan contains."""

    targets: tuple[str, ...] = ()
    replace: bool = False
    prune: bool = False
    # The user confirmed that an empty state is expected (first run): see ``new_state_creates``.
    new_state: bool = False
    # Where the default organization id came from (``--organization``, a variable, the project
    # file): named when the key is refused an organization a manifest did not state itself.
    organization_source: str = "--organization / RECONCILE_ORGANIZATION_ID"
    # The kinds of which the run sees every manifest the project has (a rename of
    # ``metadata.name`` may then be inferred, and prune may delete pipes); None: the run's paths
    # are the project (no project file names its manifests).
    complete_kinds: frozenset[str] | None = None

    def covers(self, kind: str) -> bool:
        """Tell whether the run sees every manifest of ``kind`` the project has."""
        return self.complete_kinds is None or kind in self.complete_kinds


async def plan_resources(
    client: Client,
    resources: Sequence[Resource],
    state: State,
    options: PlanOptions,
    *,
    manifest_paths: Sequence[str] = (),
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Fetch live state and plan every selected resource.

    Every secret reference of the selected resources is resolved first: a missing or empty
    variable or an unreadable file anywhere stops the run before its first request, with all
    of them listed (``ManifestErrors``).
    """
    selected = select_targets(resources, options.targets)
    missing = unresolved(selected)
    if missing:
        raise ManifestErrors(missing)
    need_dashboards = options.prune and bool(state.dashboards())
    identities = pipe_identities(resources, state, may_infer=options.covers("Pipe"))
    planned: dict[str, Action] = {}

    def plan_now(resource: Resource) -> None:
        # Streaming: a pipe is planned the moment its live object (or error) is in, while the
        # other requests are still in flight; then its live object and position map are let go.
        key = resource.key
        planned[key] = plan_resource(resource, fetcher.live, state, options)
        fetcher.live.pipes.pop(key, None)
        # ``Releasable`` by duck typing: a runtime protocol check costs ~5 µs a pipe.
        release = getattr(resource.locator, "release", None)
        if release is not None:
            release()

    fetcher = Fetcher(
        client,
        organization_fallback=state.organization_values,
        progress=progress,
        on_pipe=plan_now,
        identities=identities,
    )
    # Endpoints first: the pipes that name them are planned with their ids.
    users = endpoint_users(resources)
    named = {n for r in selected for n in named_endpoints(r)}
    endpoint_manifests = [
        r for r in resources if r.kind == ENDPOINT and (r in selected or r.name in named)
    ]
    await fetcher.fetch_endpoints(endpoint_manifests)
    records = state.records(ENDPOINT)
    endpoint_actions = {
        r.name: plan_endpoint_manifest(
            r, fetcher.live.endpoints.get(r.key), records, users, replace=options.replace
        )
        for r in endpoint_manifests
    }
    planned.update({a.key: a for a in endpoint_actions.values()})
    selected, unresolved_pipes = refer(selected, endpoint_actions)
    planned.update(unresolved_pipes)
    live = await fetcher.fetch(
        [r for r in selected if r.key not in unresolved_pipes], need_dashboards=need_dashboards
    )
    # CDC scaling after the pipes: one the plan cannot set yet may follow a pipe it creates.
    cdc_manifests = [r for r in selected if r.kind == CDC]
    await fetcher.fetch_cdc(cdc_manifests)
    for resource in cdc_manifests:
        found = live.cdc[resource.key]
        creating = [a.key for a in planned.values() if creates_database_pipe(a, found.service_id)]
        planned[resource.key] = plan_cdc(resource, found, creating)
    current = {r.name for r in resources if r.kind == "Dashboard"}
    bindings = bind_dashboards(
        [r for r in selected if r.kind == "Dashboard"],
        live,
        state,
        current,
        may_infer=options.covers("Dashboard"),
        files=run_files(resources),
    )
    # The plan keeps the manifests' order whatever order the answers came in.
    refused = client.health.refused_organizations
    actions = [
        blame_organization(
            resource,
            planned[resource.key]
            if resource.key in planned
            else plan_resource(resource, live, state, options, bindings),
            refused,
            options.organization_source,
        )
        for resource in selected
    ]
    notes = list(live.notes)
    if options.prune:
        if options.covers("Dashboard"):
            actions.extend(prune_dashboards(current, bindings, live, state, options.targets))
        elif any(r.created_by_us for r in state.dashboards().values()):
            notes.append(prune_partial("Dashboard"))
        if options.covers("Pipe"):
            actions.extend(
                await prune_pipes(client, resources, identities, live, state, options.targets)
            )
        elif any(r.created_by_us for r in state.records("Pipe").values()):
            notes.append(prune_partial("Pipe"))
        if options.covers(ENDPOINT):
            actions.extend(await prune_endpoints(client, resources, state, options.targets))
        elif any(r.created_by_us for r in state.records(ENDPOINT).values()):
            notes.append(prune_partial(ENDPOINT))
    else:
        notes.extend(
            retired_note(
                resources,
                identities if options.covers("Pipe") else None,
                bindings if options.covers("Dashboard") else None,
                state,
            )
        )
    plan = Plan(
        actions=tuple(actions),
        requests_made=dict(client.stats.requests),
        manifest_paths=tuple(manifest_paths),
        notes=tuple(notes),
        dashboards_listable=live.capabilities.dashboards_list,
    )
    blind = () if options.new_state else new_state_creates(plan, state)
    if blind:
        plan = dataclasses.replace(
            plan, notes=(*plan.notes, new_state_message(blind, state, refusing=False))
        )
    return plan


def blame_organization(
    resource: Resource, action: Action, refused: set[str], default_source: str
) -> Action:
    """Name what chose the organization of a resource the key was refused access to.

    The key itself was accepted (else the run would have stopped): the organization id is
    wrong, so the error points at the manifest line that states it, or at the setting that
    supplied the default.
    """
    organization = str(resource.spec.get("organizationId", ""))
    if action.operation != Op.ERROR or organization not in refused:
        return action
    stated = resource.locate_spec("organizationId")
    if stated != resource.locate("spec"):
        origin = f"{stated}: spec.organizationId"
    else:
        origin = f"{default_source} (the manifest states no spec.organizationId)"
    note = (
        f"the key was refused organization {organization}, chosen by {origin}; the key "
        "itself was accepted: check that id, or that the key belongs to that organization"
    )
    return dataclasses.replace(action, errors=(*action.errors, note))


def new_state_creates(plan: Plan, state: State) -> tuple[str, ...]:
    """Return the dashboards a new state would create on a server that cannot list them.

    With no list endpoint the state is the only memory of what was created: a new state (a
    fresh runner, a mistyped ``--state``) would create every dashboard again.
    """
    if state.exists or plan.dashboards_listable is not False:
        return ()
    return tuple(a.key for a in plan.actions if a.kind == "Dashboard" and a.operation == Op.CREATE)


def new_state_message(keys: Sequence[str], state: State, *, refusing: bool) -> str:
    """Explain the new-state guard: what it protects and how to proceed."""
    head = "refusing to create" if refusing else "apply will refuse to create"
    return (
        f"{head} {', '.join(keys)}: the state {state.location} is new (never written in this "
        "backend and workspace) and the server cannot list dashboards, so dashboards created by "
        "earlier runs elsewhere cannot be seen and would be created again. Point --state "
        "(RECONCILE_STATE) and --workspace at the shared state those runs used, or pass "
        "--new-state if this is the first run for this organization"
        + ("; nothing was sent" if refusing else "")
    )


def plan_resource(
    resource: Resource,
    live: LiveState,
    state: State,
    options: PlanOptions,
    bindings: Mapping[str, Binding] | None = None,
) -> Action:
    """Plan one resource from what was fetched."""
    if resource.kind == "Pipe":
        return _plan_pipe(resource, live, state, options)
    if resource.kind == ENDPOINT:
        return plan_endpoint_manifest(
            resource,
            live.endpoints.get(resource.key),
            state.records(ENDPOINT),
            {},
            replace=options.replace,
        )
    where = resource.locate("metadata", "name")
    if resource.kind == "Organization":
        observed = live.organizations.get(resource.key) or Observed(
            error="organization was not fetched"
        )
        return plan_organization(resource, observed, str(resource.spec.get("organizationId")))
    if resource.kind == "Dashboard":
        if live.dashboards_error is not None:
            return error_action("Dashboard", resource.name, where, live.dashboards_error)
        binding = (bindings or {}).get(resource.name) or bind_dashboards(
            [resource], live, state, {resource.name}
        ).get(resource.name, Binding(Bound.NEW))
        if binding.error is not None:
            return error_action("Dashboard", resource.name, where, binding.error)
        can_read = live.capabilities.dashboards_list is True
        action = plan_dashboard(
            resource,
            binding.live,
            binding.record,
            can_read=can_read,
            can_update=can_read,
            replace=options.replace,
        )
        return dataclasses.replace(
            action,
            renamed_from=binding.renamed_from,
            bound=binding.how,
            warnings=(*action.warnings, *held_warnings("Dashboard", binding)),
        )
    return error_action(resource.kind, resource.name, where, f"unknown kind {resource.kind}")


def _plan_pipe(resource: Resource, live: LiveState, state: State, options: PlanOptions) -> Action:
    """Plan one pipe from what was fetched: by its binding, an update, create or replace."""
    key = resource.key
    ids = live.pipe_ids.get(key)
    observed = live.pipes.get(key) or Observed(error="pipe was not fetched")
    binding = live.bindings.get(key)
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
    check = SecretCheck(state.key, {} if fresh else state.fingerprints(_record_key(binding, key)))
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
        # The pipe list is one of the real service's extensions: where the server has it, it
        # has the state and scaling endpoints too (``--spec-only`` has none of them).
        lifecycle = live.capabilities.pipes_list is True
        action = plan_pipe(
            resource,
            spec,
            observed,
            check,
            ids=target,
            replace=options.replace,
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
