"""Binding manifests to live objects, and pruning what this tool created (no request sent).

The identity rule itself is ``reconciler.model.identity``; here it is applied to a run: which
state record each pipe or dashboard manifest uses (its own, or the one a rename of its
``metadata.name`` moves to it), which live dashboard each dashboard manifest is bound to, and
which created objects no current manifest is bound to any more (``--prune``): the refresh
reads each of those (``retired_needs``) and the plan deletes the ones still there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.client.livestate import LiveSnapshot, RetiredNeed
from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import Location, PlanError
from reconciler.model.identity import Binding, Identities, Listed, Record, bind, rename_source
from reconciler.model.resources import Resource
from reconciler.plan import lifecycle
from reconciler.plan.actions import Action, error_action
from reconciler.plan.dashboards import plan_prune
from reconciler.plan.diff import content_hash, dashboard_content
from reconciler.plan.endpoints import plan_endpoint_prune
from reconciler.plan.targets import matches_target
from reconciler.state.document import State

__all__: list[str] = []


def bind_dashboards(
    dashboards: Sequence[Resource],
    live: LiveSnapshot,
    state: State,
    current: set[str],
    *,
    may_infer: bool = True,
    files: frozenset[str] | None = None,
) -> dict[str, Binding]:
    """Bind each dashboard manifest to one live id; raise PlanError when two share one.

    A state record whose ``metadata.name`` no manifest uses any more is an orphan; a manifest
    with no record of its own takes it over (a rename of ``metadata.name``, never a delete and a
    create) when it says so (``metadata.renamedFrom``), or, when the run sees every dashboard
    manifest of the project (``may_infer``), when the orphan holds the same dashboard (same
    display name, recorded or live, or same content) and its manifest's file is not left out
    of the run (``outside_run``; ``files``: the run's manifest files).
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
        matches = [m for m in matches if not outside_run(orphans[m], files)]
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
    files = run_files(resources)
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
                if not outside_run(orphan, files)
            ]
            old = rename_source(
                resource.name, resource.renamed_from, orphans, may_infer=may_infer, matches=matches
            )
            if old is not None:
                renamed[resource.name] = old
                del orphans[old]
    return Identities(records, renamed)


def run_files(resources: Sequence[Resource]) -> frozenset[str]:
    """Return the real paths of the manifest files a run read."""
    return frozenset(os.path.realpath(r.file) for r in resources if r.file)


def outside_run(record: Record, files: frozenset[str] | None) -> bool:
    """Tell whether a record's manifest file still exists but the run did not read it: its
    manifest may well be there still, so no other manifest is inferred to be its rename."""
    if files is None or not record.manifest or not os.path.isfile(record.manifest):
        return False
    return os.path.realpath(record.manifest) not in files


def display_name(resource: Resource) -> str:
    """Return a dashboard manifest's display name (``spec.name``; ``metadata.name`` is a slug)."""
    return str(resource.spec.get("name") or resource.name)


def held_warnings(kind: str, binding: Binding) -> tuple[str, ...]:
    """Say why a live object with the manifest's name was not adopted (another manifest's)."""
    return tuple(
        f"a {kind.lower()} with this name exists ({ident}) but the state binds it to "
        f"{kind}/{holder}, so this creates another; if this manifest is {kind}/{holder} "
        f"renamed, add `metadata.renamedFrom: {holder}` to it"
        for ident, holder in binding.held_elsewhere
    )


def prune_partial(kind: str) -> str:
    """Say why ``--prune`` deletes nothing of ``kind`` in a run over part of the project."""
    noun = kind.lower()
    return (
        f"--prune deletes no {noun} in this run: its paths do not cover every {noun} manifest "
        f"of the project (reconcile.yaml `manifests`), so a {noun} whose manifest is only "
        "elsewhere could be taken for removed; run it over the whole project"
    )


def retired_note(
    resources: Sequence[Resource],
    identities: Identities | None,
    bindings: Mapping[str, Binding] | None,
    state: State,
) -> list[str]:
    """Say which pipes and dashboards this tool created have no manifest any more (``--prune``
    deletes them); ``None`` for a kind the run does not cover."""
    gone: list[str] = []
    for kind, moved in (
        ("Dashboard", {b.renamed_from for b in (bindings or {}).values() if b.renamed_from}),
        ("Pipe", set(identities.renamed.values()) if identities is not None else set()),
    ):
        if (bindings if kind == "Dashboard" else identities) is None:
            continue
        current = {r.name for r in resources if r.kind == kind}
        gone.extend(
            f"{kind}/{name}"
            for name, record in sorted(state.records(kind).items())
            if record.created_by_us and record.id and name not in current and name not in moved
        )
    if not gone:
        return []
    return [
        f"the state records resources this tool created whose manifests are gone "
        f"({', '.join(gone)}): they are left alone; plan or apply with --prune to delete them"
    ]


def retired_needs(
    resources: Sequence[Resource],
    identities: Identities,
    state: State,
    targets: Sequence[str],
    kinds: frozenset[str],
) -> tuple[RetiredNeed, ...]:
    """Return what ``--prune`` may delete of ``kinds`` (pipes, endpoints), for the refresh to
    read: each object this tool created whose manifest is gone (never a pinned, adopted or
    renamed one)."""
    pinned = {str(r.spec["pipeId"]) for r in resources if r.kind == "Pipe" and "pipeId" in r.spec}
    out: list[RetiredNeed] = []
    for kind in ("Pipe", ENDPOINT):
        if kind not in kinds:
            continue
        current = {r.name for r in resources if r.kind == kind}
        moved = set(identities.renamed.values()) if kind == "Pipe" else set()
        for name, record in sorted(state.records(kind).items()):
            scope = record.scope or {}
            org, service = scope.get("organizationId"), scope.get("serviceId")
            if (
                name in current
                or name in moved
                or not record.created_by_us
                or not record.id
                or (kind == "Pipe" and record.id in pinned)
                or not org
                or not service
                or not matches_target(f"{kind}/{name}", targets)
            ):
                continue
            out.append(RetiredNeed(kind, name, org, service, record.id))
    return tuple(out)


def prune_pipes(
    resources: Sequence[Resource],
    identities: Identities,
    bound: set[str],
    live: LiveSnapshot,
    state: State,
    targets: Sequence[str],
) -> list[Action]:
    """Plan deleting each pipe this tool created whose manifest is gone (never a pinned or
    adopted one, nor one a current manifest is bound to: ``bound``); one gone is skipped."""
    return [
        action
        for need in retired_needs(resources, identities, state, targets, frozenset({"Pipe"}))
        if need.id not in bound
        for action in _prune_one(need, live, state)
    ]


def _prune_one(need: RetiredNeed, live: LiveSnapshot, state: State) -> list[Action]:
    """Plan deleting one object the refresh read for ``--prune`` (nothing if it is gone)."""
    found = live.retired.get(need.key)
    where = Location(state.location)
    if found is None:
        return []  # already gone
    if isinstance(found, str):
        return [error_action(need.kind, need.name, where, found)]
    record = state.records(need.kind)[need.name]
    if need.kind == ENDPOINT:
        return [plan_endpoint_prune(need.name, record, found, where)]
    return [lifecycle.plan_prune(need.name, record, found, where)]


def prune_dashboards(
    current: set[str],
    bindings: Mapping[str, Binding],
    live: LiveSnapshot,
    state: State,
    targets: Sequence[str],
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
            or not matches_target(f"Dashboard/{name}", targets)
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


def prune_endpoints(
    resources: Sequence[Resource], live: LiveSnapshot, state: State, targets: Sequence[str]
) -> list[Action]:
    """Plan deleting each reverse private endpoint this tool created whose manifest is gone
    (never an adopted one); one already gone is skipped. Apply deletes them after the pipes."""
    empty = Identities({}, {})
    needs = retired_needs(resources, empty, state, targets, frozenset({ENDPOINT}))
    return [action for need in needs for action in _prune_one(need, live, state)]
