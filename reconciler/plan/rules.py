"""Rules of the real service that span several fields, checked before anything is sent.

A JSON Schema judges one document field by field; the service also refuses combinations:
field mappings that leave a destination column unmapped or name a column the table does not
have. Each rule looks at the pipe as it would be after the update (the manifest's value where
it states one, the live value otherwise) and returns messages naming the manifest line, which
the planner turns into errors of the action: a plan error, never a 400 at apply time.

Pure: imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.model.resources import Resource
from reconciler.plan.diff import ChangeKind, FieldChange

_MAPPINGS = ("fieldMappings",)
_COLUMNS = ("destination", "columns")


def _names(items: Any, key: str) -> list[str] | None:
    if not isinstance(items, list):
        return None
    return [str(i.get(key)) for i in items if isinstance(i, Mapping)]


def field_mapping_errors(
    resource: Resource,
    spec: Mapping[str, Any],
    live: Mapping[str, Any],
    changes: Sequence[FieldChange],
) -> list[str]:
    """Check "every destination column mapped once, to existing columns only" when either
    list is about to change."""
    touched = {c.path for c in changes if c.kind is ChangeKind.SET}
    if _MAPPINGS not in touched and _COLUMNS not in touched:
        return []
    stated_mappings = "fieldMappings" in spec
    destination = spec.get("destination")
    stated_columns = isinstance(destination, Mapping) and "columns" in destination
    mappings = spec["fieldMappings"] if stated_mappings else live.get("fieldMappings")
    columns_value = (
        destination["columns"]
        if stated_columns and isinstance(destination, Mapping)
        else (live.get("destination") or {}).get("columns")
    )
    columns = _names(columns_value, "name")
    targets = _names(mappings, "destinationField")
    if columns is None or targets is None:
        return []
    where = resource.locate_spec(*(_MAPPINGS if stated_mappings else _COLUMNS))
    listed = ", ".join(columns) or "none"
    errors: list[str] = []
    seen: set[str] = set()
    for index, target in enumerate(targets):
        at = (
            resource.locate_spec("fieldMappings", index, "destinationField")
            if stated_mappings
            else where
        )
        if target not in columns:
            errors.append(
                f"fieldMappings[{index}] maps to {target!r} ({at}), which is not a column of "
                f"the destination table ({listed}); the service would answer 400"
            )
        elif target in seen:
            errors.append(f"fieldMappings[{index}] maps to {target!r} ({at}) a second time")
        seen.add(target)
    missing = [c for c in columns if c not in seen]
    if missing:
        errors.append(
            f"fieldMappings ({where}) leave destination column(s) {', '.join(missing)} not "
            "mapped: the service requires every destination column to be mapped"
        )
    return errors
