"""Checking writes: did the live object take the change, and what to send when it cannot be read.

After a write, ``unconverged`` compares the answer (the object after the update, or after
waiting for its run state) with the planned changes; anything not shown is reported as "not
converged", each field named with the value it has and the one expected (inside a dashboard's
tiles too: the generic nested diff of ``model.nesteddiff``). When the answer to a
non-idempotent write was lost, ``write_visible`` tells from a re-read whether it took effect
(so it is never blindly resent); when a table-mapping edit was refused, ``without_edits_made``
tells from a re-read which of its edits are already made (a killed run's request that landed
late), so that only the rest is sent again. ``deferred_endpoint_bodies`` computes an organization's
private endpoint add/remove from the organization just read, for servers that cannot read it
at plan time. All pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.model.fields import database_kind
from reconciler.model.json import JsonMapping, JsonObject, as_items, as_mapping
from reconciler.model.nesteddiff import differences, same_length_objects
from reconciler.model.resources import JsonPath, format_path
from reconciler.model.secrets import SecretTree
from reconciler.plan.actions import Action, Op, Request
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    FieldValue,
    Missing,
    format_mapping_key,
    is_default,
    mapping_key,
    members,
    same,
)
from reconciler.plan.runstate import RunState

__all__: list[str] = []


def value_at(obj: SecretTree, path: JsonPath) -> FieldValue:
    """Return the value at ``path`` inside ``obj`` (MISSING where a key is absent)."""
    node = obj
    for part in path:
        if isinstance(node, Mapping) and isinstance(part, str) and part in node:
            node = node[part]
        else:
            return Missing()  # MISSING itself (one instance), typed
    return node


def unconverged(action: Action, live: JsonMapping, *, waited: bool = True) -> list[str]:
    """List the planned changes that ``live`` (the object after the writes) does not show.

    A run state is checked only when apply ``waited`` for it (``--no-wait`` leaves it moving).
    """
    problems: list[str] = []
    if action.operation is Op.DELETE:
        return problems  # the object is gone: nothing to compare
    if action.kind == "Pipe":
        problems += _run_state_problems(action, live, waited=waited)
        kind = database_kind(live.get("source")) or "postgres"
        mappings = value_at(live, ("source", kind, "tableMappings"))
        present = {mapping_key(m): m for m in mappings} if isinstance(mappings, list) else {}
        added = {
            format_mapping_key(mapping_key(members(c.new)))
            for c in action.changes
            if c.kind is ChangeKind.ADD
        }
        for change in action.changes:
            if change.kind is ChangeKind.SET:
                have = value_at(live, change.path)
                if not same(change.new, have):
                    problems.append(
                        f"{change.dotted} is {have!r} after the write, expected {change.new!r}"
                    )
            elif change.kind is ChangeKind.RESET:
                have = value_at(live, change.path)
                if not is_default(change.new, have):
                    problems.append(
                        f"{change.dotted} is {have!r} after the reset, expected the default "
                        f"{change.new!r}"
                    )
            elif change.kind is ChangeKind.ADD:
                key = mapping_key(members(change.new))
                if key not in present or not same(change.new, present[key]):
                    problems.append(
                        f"table mapping {format_mapping_key(key)} is missing after the write"
                    )
            elif (
                change.kind is ChangeKind.REMOVE
                and str(change.path[-1]) not in added
                and mapping_key(members(change.old)) in present
            ):
                problems.append(
                    f"table mapping {format_mapping_key(mapping_key(members(change.old)))} is still present"
                )
    elif action.kind == "Organization":
        endpoints = {
            str(e.get("id")): e
            for e in as_items(live.get("privateEndpoints"))
            if isinstance(e, Mapping)
        }
        added = {str(c.path[-1]) for c in action.changes if c.kind is ChangeKind.ADD}
        for change in action.changes:
            ident = str(change.path[-1])
            if change.kind is ChangeKind.SET and not same(
                change.new, live.get(str(change.path[0]), MISSING)
            ):
                problems.append(
                    f"{change.dotted} is {live.get(str(change.path[0]))!r} after the write"
                )
            elif change.kind is ChangeKind.ADD and (
                ident not in endpoints or not same(change.new, endpoints[ident])
            ):
                problems.append(f"private endpoint {ident} is missing after the write")
            elif change.kind is ChangeKind.REMOVE and ident not in added and ident in endpoints:
                problems.append(f"private endpoint {ident} is still present after the write")
    elif action.kind in ("Dashboard", "ReversePrivateEndpoint", "CdcScaling"):
        for change in action.changes:
            if change.kind is ChangeKind.SET:
                problems += _fields_not_taken(
                    change.path, change.new, live.get(str(change.path[0]), MISSING)
                )
    return problems


def _fields_not_taken(path: JsonPath, wanted: object, have: object) -> list[str]:
    """Name each field the manifest states that ``have`` (the value after the write) lacks.

    The generic nested diff, with the plan's rules: numbers by value, only the stated keys
    (an id the server assigns is no difference), same-length lists of objects item by item.
    """
    return [
        f"{format_path((*path, *inner))} is {_shown(old)} after the write, expected {_shown(new)}"
        for inner, old, new in differences(
            have,
            wanted,
            lists=same_length_objects,
            numbers_by_value=True,
            stated_only=True,
            absent=MISSING,
        )
    ]


def _shown(value: object) -> str:
    return "absent" if value is MISSING else repr(value)


def _run_state_problems(action: Action, live: Mapping[str, Any], *, waited: bool) -> list[str]:
    problems: list[str] = []
    for change in action.changes:
        if change.kind is not ChangeKind.COMMAND or not waited:
            continue
        have = value_at(live, change.path)
        if have not in RunState(str(change.new)).reached_by:
            problems.append(f"state is {have!r} after the state command, expected {change.new}")
    return problems


def _items(value: SecretTree) -> Sequence[SecretTree]:
    """Return a list member of a request body (absent or null: empty)."""
    return value if isinstance(value, list | tuple) else ()


def leaf_paths(value: object, path: JsonPath = ()) -> list[JsonPath]:
    """List the paths of the leaves of a tree (an empty mapping is a leaf)."""
    if isinstance(value, Mapping) and value:
        return [leaf for k, v in value.items() for leaf in leaf_paths(v, (*path, k))]
    return [path] if path else []


def deferred_endpoint_bodies(action: Action, live: JsonMapping) -> list[JsonObject]:
    """Compute private endpoint add/remove bodies from the organization just read."""
    wanted = [members(c.new) for c in action.changes if c.kind is ChangeKind.ADD]
    current = [e for e in as_items(live.get("privateEndpoints")) if isinstance(e, Mapping)]
    by_id = {str(e.get("id")): e for e in current}
    want_ids = {str(e.get("id")) for e in wanted}
    adds = [e for e in wanted if str(e.get("id")) not in by_id]
    changed = [
        e for e in wanted if str(e.get("id")) in by_id and not same(e, by_id[str(e.get("id"))])
    ]
    removes = [dict(e) for i, e in by_id.items() if i not in want_ids]
    removes += [dict(by_id[str(e.get("id"))]) for e in changed]
    bodies: list[dict[str, Any]] = []
    if removes:
        bodies.append({"privateEndpoints": {"remove": removes}})
    if adds or changed:
        bodies.append({"privateEndpoints": {"add": adds + changed}})
    return bodies


def without_edits_made(
    body: Mapping[str, SecretTree], live: JsonMapping
) -> dict[str, SecretTree] | None:
    """Return a pipe write's ``body`` without the table-mapping edits ``live`` already shows.

    A removal is made when no mapping of its key is left; an addition when a mapping of its
    key is there and the same as the one sent (the planner's own comparison). None when
    ``live`` shows none of them made: a refusal of the body then stands as it is.
    """
    kind = database_kind(body.get("source"))
    postgres = value_at(body, ("source", kind)) if kind else None
    if kind is None or not isinstance(postgres, Mapping):
        return None
    mappings = value_at(live, ("source", kind, "tableMappings"))
    listed = mappings if isinstance(mappings, list) else []
    present = {mapping_key(m): m for m in listed if isinstance(m, Mapping)}
    removes = [m for m in _items(postgres.get("tableMappingsToRemove")) if isinstance(m, Mapping)]
    adds = [m for m in _items(postgres.get("tableMappingsToAdd")) if isinstance(m, Mapping)]
    left_removes = [m for m in removes if mapping_key(m) in present]
    left_adds = [
        m for m in adds if mapping_key(m) not in present or not same(m, present[mapping_key(m)])
    ]
    if len(left_removes) == len(removes) and len(left_adds) == len(adds):
        return None
    edits = ("tableMappingsToRemove", "tableMappingsToAdd")
    rest = {k: v for k, v in postgres.items() if k not in edits}
    rest.update((k, v) for k, v in zip(edits, (left_removes, left_adds), strict=True) if v)
    stated = body["source"]  # a mapping: value_at found the kind inside it
    source = {k: v for k, v in (stated.items() if isinstance(stated, Mapping) else ()) if k != kind}
    if rest:
        source[kind] = rest
    out = {k: v for k, v in body.items() if k != "source"}
    # validateSamples only qualifies a write: alone, it is nothing to send.
    if set(source) - {"validateSamples"}:
        out["source"] = source
    return out


def write_visible(action: Action, request: Request, live: JsonMapping) -> bool:
    """Tell from a re-read whether a lost write's table-mapping or endpoint edits took effect."""
    body = request.body or {}
    if action.kind == "Pipe":
        kind = database_kind(body.get("source")) or "postgres"
        postgres = as_mapping(as_mapping(body.get("source")).get(kind))
        mappings = value_at(live, ("source", kind, "tableMappings"))
        present = {mapping_key(m) for m in mappings} if isinstance(mappings, list) else set()
        adds = [mapping_key(as_mapping(m)) for m in as_items(postgres.get("tableMappingsToAdd"))]
        removes = [
            mapping_key(as_mapping(m)) for m in as_items(postgres.get("tableMappingsToRemove"))
        ]
        if adds:
            return all(k in present for k in adds)
        return bool(removes) and all(k not in present for k in removes)
    if action.kind == "Organization":
        endpoints = {
            str(e.get("id"))
            for e in as_items(live.get("privateEndpoints"))
            if isinstance(e, Mapping)
        }
        change = as_mapping(body.get("privateEndpoints"))
        added = [str(as_mapping(e).get("id")) for e in as_items(change.get("add"))]
        removed = [str(as_mapping(e).get("id")) for e in as_items(change.get("remove"))]
        if added:
            return all(i in endpoints for i in added)
        return bool(removed) and all(i not in endpoints for i in removed)
    return False
