"""The planning engine: from desired resources, a client and a state to a plan.

This is the one impure step between the pure pieces: it fetches live state through the API
client, resolves secret references, reads the state file's records and hands everything to
the pure planner, resource by resource. An error on one resource (an API failure, a missing
secret) becomes an error action for that resource; the others are still planned.
``reconciler.plan.run.compute_plan`` wraps it as the whole of ``reconcile plan``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.live import Fetcher, LiveState, Observed
from reconciler.client.paths import PipeIds
from reconciler.model.errors import (
    ApiError,
    AuthenticationFailed,
    ConfigError,
    Location,
    ManifestError,
    NotFound,
    PlanError,
)
from reconciler.model.identity import Binding, Bound, Identities, Listed, bind, rename_source
from reconciler.model.resources import Resource
from reconciler.model.secrets import resolve_tree, secret_paths
from reconciler.plan import lifecycle
from reconciler.plan.actions import Action, Op, Plan, error_action
from reconciler.plan.dashboards import plan_dashboard, plan_prune
from reconciler.plan.diff import SecretCheck, content_hash, dashboard_content
from reconciler.plan.lifecycle import plan_create
from reconciler.plan.planners import plan_organization, plan_pipe
from reconciler.plan.runstate import after_create
from reconciler.state.document import State


@dataclass(frozen=True)
class PlanOptions:
    """Choices that change what a plan contains."""

    targets: tuple[str, ...] = ()
    replace: bool = False
    prune: bool = False
    # The user confirmed that an empty state is expected (first run): see ``new_state_creates``.
    new_state: bool = False
    # The kinds of which the run sees every manifest the project has (a rename of
    # ``metadata.name`` may then be inferred, and prune may delete pipes); None: the run's paths
    # are the project (no project file names its manifests).
    complete_kinds: frozenset[str] | None = None

    def covers(self, kind: str) -> bool:
        """Tell whether the run sees every manifest of ``kind`` the project has."""
        return self.complete_kinds is None or kind in self.complete_kinds


def matches_target(key: str, targets: Sequence[str]) -> bool:
    """Tell whether ``Kind/name`` matches any ``--target`` glob (kind case-insensitive)."""
    if not targets:
        return True
    kind, _, name = key.partition("/")
    for target in targets:
        t_kind, sep, t_name = target.partition("/")
        if not sep:
            t_kind, t_name = "*", target
        if fnmatch.fnmatchcase(kind.lower(), t_kind.lower()) and fnmatch.fnmatchcase(name, t_name):
            return True
    return False


def select_targets(resources: Sequence[Resource], targets: Sequence[str]) -> list[Resource]:
    """Return the resources a plan covers; a target matching nothing is an error."""
    if not targets:
        return list(resources)
    chosen = [r for r in resources if matches_target(r.key, targets)]
    for target in targets:
        if not any(matches_target(r.key, [target]) for r in resources):
            known = ", ".join(r.key for r in resources[:10])
            raise ConfigError(
                f"--target {target} matches no resource (resources: {known}{', …' if len(resources) > 10 else ''})"
            )
    return chosen


def select_actions(plan: Plan, targets: Sequence[str]) -> Plan:
    """Return ``plan`` with only the actions ``targets`` match; a target matching none is an error.

    This is how ``apply --plan FILE --target …`` honours targets: the saved plan's other
    actions are neither sent nor reported.
    """
    if not targets:
        return plan
    for target in targets:
        if not any(matches_target(a.key, [target]) for a in plan.actions):
            known = ", ".join(a.key for a in plan.actions[:10])
            raise ConfigError(
                f"--target {target} matches no action of the saved plan (actions: {known or 'none'})"
            )
    return dataclasses.replace(
        plan, actions=tuple(a for a in plan.actions if matches_target(a.key, targets))
    )


def resolve_pipe_secrets(resource: Resource) -> dict[str, Any]:
    """Return the pipe's spec with every secret reference resolved to a ``Secret``."""
    spec: dict[str, Any] = dict(resource.spec)
    for path in secret_paths(resource):
        source = dict(spec["source"])
        kind = dict(source[path[1]])
        kind[str(path[2])] = resolve_tree(resource, path, kind[str(path[2])])
        source[path[1]] = kind
        spec["source"] = source
    return spec


async def plan_resources(
    client: Client,
    resources: Sequence[Resource],
    state: State,
    options: PlanOptions,
    *,
    manifest_paths: Sequence[str] = (),
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Fetch live state and plan every selected resource."""
    selected = select_targets(resources, options.targets)
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
    live = await fetcher.fetch(selected, need_dashboards=need_dashboards)
    current = {r.name for r in resources if r.kind == "Dashboard"}
    bindings = bind_dashboards(
        [r for r in selected if r.kind == "Dashboard"],
        live,
        state,
        current,
        may_infer=options.covers("Dashboard"),
    )
    # The plan keeps the manifests' order whatever order the answers came in.
    actions = [
        planned[resource.key]
        if resource.key in planned
        else plan_resource(resource, live, state, options, bindings)
        for resource in selected
    ]
    notes = list(live.notes)
    if options.prune:
        actions.extend(_prune_actions(current, bindings, live, state, options))
        if options.covers("Pipe"):
            actions.extend(await prune_pipes(client, resources, identities, live, state, options))
        elif any(r.created_by_us for r in state.records("Pipe").values()):
            notes.append(PRUNE_PARTIAL)
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


def bind_dashboards(
    dashboards: Sequence[Resource],
    live: LiveState,
    state: State,
    current: set[str],
    *,
    may_infer: bool = True,
) -> dict[str, Binding]:
    """Bind each dashboard manifest to one live id; raise PlanError when two share one.

    A state record whose ``metadata.name`` no manifest uses any more is an orphan; a manifest
    with no record of its own takes it over (a rename of ``metadata.name``, never a delete and a
    create) when it says so (``metadata.renamedFrom``), or, when the run sees every dashboard
    manifest of the project (``may_infer``), when the orphan holds the same dashboard (same
    display name, recorded or live, or same content).
    """
    records = state.dashboards()
    orphans = {n: r for n, r in records.items() if n not in current and r.id}
    listable = live.capabilities.dashboards_list is True
    listed = Listed.of(live.dashboards or []) if listable else None
    renamed: dict[str, str] = {}
    for resource in dashboards:
        if resource.name in records:
            continue
        display = display_name(resource)
        wanted = content_hash(dashboard_content(resource.spec))
        matches = [
            name
            for name, orphan in sorted(orphans.items())
            if display in (orphan.display_name, _live_name(listed, orphan.id))
            or (orphan.display_name is None and orphan.content_hash == wanted)
        ]
        old = rename_source(
            resource.name, resource.renamed_from, orphans, may_infer=may_infer, matches=matches
        )
        if old is not None:
            renamed[resource.name] = old
            del orphans[old]
    identities = Identities(records, renamed)
    out: dict[str, Binding] = {}
    owners: dict[str, Resource] = {}
    conflicts: list[str] = []
    for resource in dashboards:
        binding = bind(
            name=display_name(resource),
            pinned=None,
            record=identities.record(resource.name),
            listed=listed,
            held=identities.held,
            owner=resource.name,
            renamed_from=renamed.get(resource.name),
            kind_label="dashboard",
        )
        out[resource.name] = binding
        if binding.id:
            first = owners.setdefault(binding.id, resource)
            if first is not resource:
                conflicts.append(
                    f"dashboard {binding.id} is addressed by two manifests: {first.key} "
                    f"({first.locate('metadata', 'name')}) and {resource.key} "
                    f"({resource.locate('metadata', 'name')}); keep one of them"
                )
    if conflicts:
        raise PlanError("\n".join(conflicts))
    return out


def _live_name(listed: Listed | None, ident: str | None) -> Any:
    item = listed.by_id.get(ident) if listed is not None and ident else None
    return item.get("name") if item is not None else None


def pipe_identities(resources: Sequence[Resource], state: State, *, may_infer: bool) -> Identities:
    """Return what state knows of the pipe manifests, renames of ``metadata.name`` resolved.

    A record whose manifest is gone moves to a manifest with no record of its own when that
    manifest says so (``metadata.renamedFrom``) or, when the run sees every pipe manifest of the
    project, when the record holds its pipe (same pinned id, or same recorded display name).
    """
    records = state.records("Pipe")
    if not records:
        return Identities({}, {})
    pipes = [r for r in resources if r.kind == "Pipe"]
    current = {r.name for r in pipes}
    orphans = {n: r for n, r in records.items() if n not in current and r.id}
    renamed: dict[str, str] = {}
    if orphans:
        for resource in pipes:
            if resource.name in records:
                continue
            pinned = resource.spec.get("pipeId")
            matches = [
                name
                for name, orphan in sorted(orphans.items())
                if (pinned and orphan.id == pinned)
                or (not pinned and orphan.display_name == resource.spec.get("name"))
            ]
            old = rename_source(
                resource.name, resource.renamed_from, orphans, may_infer=may_infer, matches=matches
            )
            if old is not None:
                renamed[resource.name] = old
                del orphans[old]
    return Identities(records, renamed)


def display_name(resource: Resource) -> str:
    """Return a dashboard manifest's display name (``spec.name``; ``metadata.name`` is a slug)."""
    return str(resource.spec.get("name") or resource.name)


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
            warnings=(*action.warnings, *_held_warnings("Dashboard", binding)),
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
        warnings = _held_warnings("Pipe", binding)
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
    return dataclasses.replace(action, renamed_from=renamed) if renamed else action


def _record_key(binding: Binding | None, key: str) -> str:
    """Return the state address whose fingerprints a pipe compares with (its old one if renamed)."""
    if binding is not None and binding.renamed_from is not None:
        return f"Pipe/{binding.renamed_from}"
    return key


def _held_warnings(kind: str, binding: Binding) -> tuple[str, ...]:
    """Say why a live object with the manifest's name was not adopted (another manifest's)."""
    return tuple(
        f"a {kind.lower()} with this name exists ({ident}) but the state binds it to "
        f"{kind}/{holder}, so this creates another; if this manifest is {kind}/{holder} "
        f"renamed, add `metadata.renamedFrom: {holder}` to it"
        for ident, holder in binding.held_elsewhere
    )


PRUNE_PARTIAL = (
    "--prune deletes no pipe in this run: its paths do not cover every pipe manifest of the "
    "project (reconcile.yaml `manifests`), so a pipe whose manifest is only elsewhere could be "
    "taken for removed; run it over the whole project"
)


async def prune_pipes(
    client: Client,
    resources: Sequence[Resource],
    identities: Identities,
    live: LiveState,
    state: State,
    options: PlanOptions,
) -> list[Action]:
    """Plan deleting each pipe this tool created whose manifest is gone (never a pinned or
    adopted one, nor one a current manifest is bound to); a pipe already gone is skipped."""
    current = {r.name for r in resources if r.kind == "Pipe"}
    moved = set(identities.renamed.values())
    bound = {b.id for b in live.bindings.values() if b.id}
    bound |= {str(r.spec["pipeId"]) for r in resources if r.kind == "Pipe" and "pipeId" in r.spec}
    out: list[Action] = []
    for name, record in sorted(state.records("Pipe").items()):
        scope = record.scope or {}
        if (
            name in current
            or name in moved
            or not record.created_by_us
            or not record.id
            or record.id in bound
            or not scope.get("organizationId")
            or not scope.get("serviceId")
            or not matches_target(f"Pipe/{name}", options.targets)
        ):
            continue
        ids = PipeIds(scope["organizationId"], scope["serviceId"], record.id)
        try:
            pipe = await reads.get_pipe(client, ids, name=name)
        except NotFound:
            continue  # already gone
        except AuthenticationFailed:
            raise
        except ApiError as exc:
            out.append(error_action("Pipe", name, Location(state.location), str(exc)))
            continue
        out.append(lifecycle.plan_prune(name, record, pipe, Location(state.location)))
    return out


def _prune_actions(
    current: set[str],
    bindings: Mapping[str, Binding],
    live: LiveState,
    state: State,
    options: PlanOptions,
) -> list[Action]:
    """Delete only what this tool created and no current manifest is bound to (by id)."""
    if live.dashboards_error is not None:
        return []
    bound = {b.id for b in bindings.values() if b.id}
    moved = {b.renamed_from for b in bindings.values() if b.renamed_from}
    out: list[Action] = []
    for name, record in sorted(state.dashboards().items()):
        if (
            name in current
            or name in moved
            or record.id in bound
            or not record.created_by_us
            or not matches_target(f"Dashboard/{name}", options.targets)
        ):
            continue
        exists = live.dashboards is None or any(
            str(d.get("id")) == record.id for d in live.dashboards
        )
        if not exists:
            continue
        out.append(
            plan_prune(
                name,
                record,
                can_delete=live.capabilities.dashboards_list is True,
                location=Location(state.location),
            )
        )
    return out
