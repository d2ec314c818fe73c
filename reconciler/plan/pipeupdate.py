"""A pipe's update requests: its field changes as one merge-style PATCH body, or two.

Writable fields are set at their paths; a ``null`` reset is sent as null, except where the
field's enumeration has none (then the default itself); table mappings become
``tableMappingsToRemove``/``tableMappingsToAdd``. The service refuses to remove and add the
same table in one request: then removals go first, in a request of their own. The run state
and scaling are never in the body (``lifecycle`` sends them through their own endpoints).
Each body's source is then completed from the live pipe (``rules.complete_source``), since
the service wants some fields in every update of a source.

Pure: no I/O, no httpx, no click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.model.fields import RESET_SENDS_DEFAULT, table_mapping_fields
from reconciler.model.json import JsonMapping, as_mapping
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.secrets import SecretTree
from reconciler.plan.actions import Purpose, Request
from reconciler.plan.diff import ChangeKind, FieldChange, mapping_key, members
from reconciler.plan.rules import complete_source
from reconciler.plan.runstate import SCALING

__all__: list[str] = []


# Spec keys written through their own endpoints, never in the update body.
_NOT_IN_UPDATE = frozenset({"state", SCALING})


def pipe_requests(
    path: str, spec: Mapping[str, SecretTree], changes: Sequence[FieldChange]
) -> list[Request]:
    """Return the update requests that carry a pipe's field changes (none without changes)."""
    if not changes:
        return []  # most pipes of a large plan: nothing below would be built
    body: dict[str, Any] = {}
    for change in changes:
        if change.path[0] in _NOT_IN_UPDATE:
            continue  # sent through the state and scaling endpoints (``lifecycle``)
        if change.kind in (ChangeKind.SET, ChangeKind.SENSITIVE):
            _set_in(body, change.path, change.new)
        elif change.kind is ChangeKind.RESET:
            # null, except where the field's enumeration has none: then the default itself.
            _set_in(body, change.path, change.new if change.path in RESET_SENDS_DEFAULT else None)
    removes = [_mapping_ref(members(c.old)) for c in changes if c.kind is ChangeKind.REMOVE]
    # The database kind whose table mappings change (one source kind per pipe).
    kind = next(
        (str(c.path[1]) for c in changes if c.kind in (ChangeKind.ADD, ChangeKind.REMOVE)),
        "postgres",
    )
    adds = [members(c.new) for c in changes if c.kind is ChangeKind.ADD]
    validate = as_mapping(spec.get("source")).get("validateSamples")

    def with_validate(b: dict[str, Any]) -> dict[str, Any]:
        if validate is not None and "source" in b:
            b["source"]["validateSamples"] = validate
        return b

    # The service refuses to remove and add the same table in one request: then removals
    # go first, in a request of their own.
    removed_tables = {mapping_key(r)[:2] for r in removes}
    split = any(mapping_key(a)[:2] in removed_tables for a in adds)
    requests: list[Request] = []
    if not split:
        if removes:
            _set_in(body, ("source", kind, "tableMappingsToRemove"), removes)
        if adds:
            _set_in(body, ("source", kind, "tableMappingsToAdd"), adds)
        if body:
            requests.append(
                Request(
                    "PATCH",
                    path,
                    with_validate(body),
                    idempotent=not (removes or adds),
                    purpose=Purpose.UPDATE,
                )
            )
        return requests
    _set_in(body, ("source", kind, "tableMappingsToRemove"), removes)
    requests.append(
        Request(
            "PATCH",
            path,
            with_validate(body),
            idempotent=False,
            purpose=Purpose.REMOVE_TABLE_MAPPINGS,
        )
    )
    requests.append(
        Request(
            "PATCH",
            path,
            with_validate({"source": {kind: {"tableMappingsToAdd": adds}}}),
            idempotent=False,
            purpose=Purpose.ADD_TABLE_MAPPINGS,
        )
    )
    return requests


def completed_sources(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    live: JsonMapping,
    updates: list[Request],
) -> list[str]:
    """Complete each update's source from the live pipe; name the fields nothing can fill."""
    errors: list[str] = []
    for request in updates:  # bodies just built here: completed before the action holds them
        body = request.body
        unknown = complete_source(body, spec, live) if isinstance(body, dict) else []
        errors.extend(
            f"{name} is required in every update of this source ({resource.locate_spec()}): "
            "state it in the manifest"
            for name in unknown
        )
    return errors


def _set_in(body: dict[str, Any], path: JsonPath, value: Any) -> None:
    node = body
    for part in path[:-1]:
        node = node.setdefault(str(part), {})
    node[str(path[-1])] = value


def _mapping_ref(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in table_mapping_fields(item) if k in item}
