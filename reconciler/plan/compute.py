"""The planning engine: refresh, then a pure plan — from desired resources and a state to a plan.

``plan_resources`` is the one impure step: it checks secret references before the first
request (every unresolvable one is reported at once and nothing is sent), works out what the
manifests need read (``wanted``), reads it through the client in one refresh
(``client.live.refresh``: a ``LiveSnapshot``) and hands it to ``plan_snapshot``, a pure
function of (desired, snapshot, state) that binds every manifest to its live object and plans
it without sending anything. An error on one resource (an API failure) becomes an error
action for that resource; the others are still planned.
``reconciler.plan.run.compute_plan`` wraps it as the whole of ``reconcile plan``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from reconciler.client.api import Client
from reconciler.client.live import LiveSnapshot, Wanted, refresh
from reconciler.model.cdc import CDC
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import ManifestErrors
from reconciler.model.identity import Binding, Identities
from reconciler.model.resources import Resource
from reconciler.model.secrets import unresolved
from reconciler.plan.actions import Action, Op, Plan
from reconciler.plan.bindings import (
    bind_dashboards,
    pipe_identities,
    prune_dashboards,
    prune_endpoints,
    prune_partial,
    prune_pipes,
    retired_needs,
    retired_note,
    run_files,
)
from reconciler.plan.cdc import creates_database_pipe, plan_cdc
from reconciler.plan.endpointrefs import endpoint_users, named_endpoints, refer
from reconciler.plan.endpoints import plan_endpoint_manifest
from reconciler.plan.kinds import plan_other, plan_seen_pipe
from reconciler.plan.pipebinding import observe_pipes, pipe_need
from reconciler.plan.targets import select_actions, select_targets
from reconciler.state.document import State

__all__ = [
    "PlanOptions",
    "new_state_creates",
    "new_state_message",
    "plan_resources",
    "select_actions",
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
    """Refresh what the selected resources need, then plan them (``plan_snapshot``).

    Every secret reference of the selected resources is resolved first: a missing or empty
    variable or an unreadable file anywhere stops the run before its first request, with all
    of them listed (``ManifestErrors``).
    """
    missing = unresolved(select_targets(resources, options.targets))
    if missing:
        raise ManifestErrors(missing)
    snapshot = await refresh(client, wanted(resources, state, options), progress)
    plan = plan_snapshot(resources, snapshot, state, options, release=_release)
    return dataclasses.replace(
        plan, requests_made=dict(client.stats.requests), manifest_paths=tuple(manifest_paths)
    )


def wanted(resources: Sequence[Resource], state: State, options: PlanOptions) -> Wanted:
    """Return what the refresh must read to plan the selected ``resources``."""
    selected = select_targets(resources, options.targets)
    identities = pipe_identities(resources, state, may_infer=options.covers("Pipe"))
    named = {n for r in selected for n in named_endpoints(r)}
    return Wanted(
        pipes=tuple(pipe_need(r, identities) for r in selected if r.kind == "Pipe"),
        endpoints=tuple(_endpoint_manifests(resources, selected, named)),
        cdc=tuple(r for r in selected if r.kind == CDC),
        organizations=tuple(r for r in selected if r.kind == "Organization"),
        dashboards=any(r.kind == "Dashboard" for r in selected)
        or (options.prune and bool(state.dashboards())),
        retired=retired_needs(resources, identities, state, options.targets, _pruned_kinds(options))
        if options.prune
        else (),
    )


def plan_snapshot(
    resources: Sequence[Resource],
    snapshot: LiveSnapshot,
    state: State,
    options: PlanOptions,
    *,
    release: Callable[[Resource], None] = lambda resource: None,
) -> Plan:
    """Bind and plan every selected resource from ``snapshot``: no request is sent.

    ``release`` is called with each pipe once it is planned (its positions may be let go).
    """
    selected = select_targets(resources, options.targets)
    identities = pipe_identities(resources, state, may_infer=options.covers("Pipe"))
    planned, selected = _plan_endpoints(resources, selected, snapshot, state, options)
    pipes = [r for r in selected if r.kind == "Pipe" and r.key not in planned]
    pipe_bindings = _plan_pipes(pipes, snapshot, identities, state, options, planned, release)
    # CDC scaling after the pipes: one the plan cannot set yet may follow a pipe it creates.
    for resource in (r for r in selected if r.kind == CDC):
        found = snapshot.cdc[resource.key]
        creating = [a.key for a in planned.values() if creates_database_pipe(a, found.service_id)]
        planned[resource.key] = plan_cdc(resource, found, creating)
    current = {r.name for r in resources if r.kind == "Dashboard"}
    bindings = bind_dashboards(
        [r for r in selected if r.kind == "Dashboard"],
        snapshot,
        state,
        current,
        may_infer=options.covers("Dashboard"),
        files=run_files(resources),
    )
    # The plan keeps the manifests' order whatever order the answers came in.
    actions = [
        blame_organization(
            resource,
            planned[resource.key]
            if resource.key in planned
            else plan_other(resource, snapshot, state, bindings, replace=options.replace),
            snapshot.refused_organizations,
            options.organization_source,
        )
        for resource in selected
    ]
    notes = list(snapshot.notes)
    if options.prune:
        bound = {b.id for b in pipe_bindings.values() if b.id}
        actions.extend(
            _prune(resources, identities, bound, bindings, snapshot, state, options, notes)
        )
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
        notes=tuple(notes),
        dashboards_listable=snapshot.capabilities.dashboards_list,
    )
    blind = () if options.new_state else new_state_creates(plan, state)
    if blind:
        plan = dataclasses.replace(
            plan, notes=(*plan.notes, new_state_message(blind, state, refusing=False))
        )
    return plan


def _plan_pipes(
    pipes: Sequence[Resource],
    snapshot: LiveSnapshot,
    identities: Identities,
    state: State,
    options: PlanOptions,
    planned: dict[str, Action],
    release: Callable[[Resource], None],
) -> dict[str, Binding]:
    """Plan each pipe into ``planned`` as its service's list is decoded; return the bindings."""
    bindings: dict[str, Binding] = {}
    lifecycle = snapshot.capabilities.pipes_list is True
    for seen in observe_pipes(pipes, snapshot, identities):
        planned[seen.resource.key] = plan_seen_pipe(
            seen, state, replace=options.replace, lifecycle=lifecycle
        )
        if seen.binding is not None:
            bindings[seen.resource.key] = seen.binding
        release(seen.resource)
    return bindings


def _endpoint_manifests(
    resources: Sequence[Resource], selected: Sequence[Resource], named: set[str]
) -> list[Resource]:
    """Return the endpoint manifests a plan reads: the selected ones and those pipes name."""
    chosen = set(map(id, selected))
    return [r for r in resources if r.kind == ENDPOINT and (id(r) in chosen or r.name in named)]


def _plan_endpoints(
    resources: Sequence[Resource],
    selected: list[Resource],
    snapshot: LiveSnapshot,
    state: State,
    options: PlanOptions,
) -> tuple[dict[str, Action], list[Resource]]:
    """Plan the endpoint manifests first: the pipes that name them are planned with their ids
    (returned with their names resolved; one whose names cannot be is an error action)."""
    users = endpoint_users(resources)
    named = {n for r in selected for n in named_endpoints(r)}
    records = state.records(ENDPOINT)
    endpoint_actions = {
        r.name: plan_endpoint_manifest(
            r, snapshot.endpoints.get(r.key), records, users, replace=options.replace
        )
        for r in _endpoint_manifests(resources, selected, named)
    }
    planned = {a.key: a for a in endpoint_actions.values()}
    referred, unresolved_pipes = refer(selected, endpoint_actions)
    planned.update(unresolved_pipes)
    return planned, referred


def _pruned_kinds(options: PlanOptions) -> frozenset[str]:
    """Return the kinds ``--prune`` may delete in this run (those it sees every manifest of)."""
    return frozenset(k for k in ("Pipe", ENDPOINT) if options.covers(k))


def _prune(
    resources: Sequence[Resource],
    identities: Identities,
    bound: set[str],
    bindings: Mapping[str, Binding],
    snapshot: LiveSnapshot,
    state: State,
    options: PlanOptions,
    notes: list[str],
) -> list[Action]:
    """Plan ``--prune``'s deletes for each kind the run covers; say why not for the others
    (``bound``: the ids of the live pipes the manifests are bound to)."""
    current = {r.name for r in resources if r.kind == "Dashboard"}
    actions: list[Action] = []
    if options.covers("Dashboard"):
        actions.extend(prune_dashboards(current, bindings, snapshot, state, options.targets))
    elif any(r.created_by_us for r in state.dashboards().values()):
        notes.append(prune_partial("Dashboard"))
    if options.covers("Pipe"):
        actions.extend(prune_pipes(resources, identities, bound, snapshot, state, options.targets))
    elif any(r.created_by_us for r in state.records("Pipe").values()):
        notes.append(prune_partial("Pipe"))
    if options.covers(ENDPOINT):
        actions.extend(prune_endpoints(resources, snapshot, state, options.targets))
    elif any(r.created_by_us for r in state.records(ENDPOINT).values()):
        notes.append(prune_partial(ENDPOINT))
    return actions


def _release(resource: Resource) -> None:
    """Let a planned pipe's position map go (``Releasable`` by duck typing: a runtime protocol
    check costs ~5 µs a pipe)."""
    release = getattr(resource.locator, "release", None)
    if release is not None:
        release()


def blame_organization(
    resource: Resource, action: Action, refused: AbstractSet[str], default_source: str
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
