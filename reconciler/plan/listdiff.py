"""List changes element by element, for people reviewing a plan.

Arrays are still sent whole (``diff``): this module only says *what* changed inside one, so a
reviewer sees the one tile, mapping or column that differs instead of two long lines cut
before the difference. Lists of objects with a natural key (``tiles`` by ``name``,
``fieldMappings`` by ``destinationField``, ``columns`` by ``name``, table mappings by
``(sourceSchemaName, sourceTable, targetTable)``, private endpoints by ``id``) become added,
removed and changed elements, the changed ones with their changed fields; any other list (or a
keyed one whose keys are missing or repeated) becomes a compact line diff, one element per
line. Elements are compared the way the plan compares them (``diff.same``: the fields the
manifest states), so a field only the server returns is never reported as a change; the
changed fields inside an element are found by deepdiff (``model.nesteddiff``) with those rules.

Pure: no I/O, no httpx, no click; renderers and the plan file call it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reconciler.model.nesteddiff import differences
from reconciler.model.resources import JsonPath, format_path
from reconciler.plan.diff import MISSING, FieldValue, same

__all__: list[str] = []


# The field(s) naming an element, by the list's own name (the last part of its path).
NATURAL_KEYS: dict[str, tuple[str, ...]] = {
    "tiles": ("name",),
    "fieldMappings": ("destinationField",),
    "columns": ("name",),
    "tableMappings": ("sourceSchemaName", "sourceTable", "targetTable"),
    "privateEndpoints": ("id",),
}
# Longest lists compared element to element (the line diff is quadratic); beyond, whole.
_MAX_CELLS = 4_000_000


class ElementOp(StrEnum):
    """What happened to one element of a list."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    MOVED = "moved"  # the same elements in another order


@dataclass(frozen=True)
class ElementChange:
    """One element added or removed, one field of a changed element, or a new order.

    ``element`` names the element: ``name="Insert errors"`` for a keyed list, its index for
    another list (the old list's for a removal, the new one's otherwise), empty for an order.
    ``path`` is the field inside a changed element (``series[0].where``).
    """

    op: ElementOp
    element: str
    path: str = ""
    old: FieldValue = MISSING
    new: FieldValue = MISSING


def list_changes(path: JsonPath, old: object, new: object) -> tuple[ElementChange, ...] | None:
    """Return the element changes between two lists (None unless both are lists)."""
    if not isinstance(old, list) or not isinstance(new, list):
        return None
    if len(old) * len(new) > _MAX_CELLS:
        return None
    fields = NATURAL_KEYS.get(str(path[-1])) if path else None
    if fields:
        keyed = _keyed_changes(old, new, fields)
        if keyed is not None:
            return keyed
    return _line_changes(old, new)


def field_changes(old: object, new: object) -> tuple[ElementChange, ...]:
    """Return the changed fields of one element (e.g. a table mapping sent as remove + add)."""
    return tuple(
        ElementChange(ElementOp.CHANGED, "", path, before, after)
        for path, before, after in _leaves(new, old)
    )


def counts(changes: Sequence[ElementChange]) -> str:
    """Summarise element changes: ``1 added, 2 changed`` (changed counts elements, not fields)."""
    parts = []
    for op in ElementOp:
        if op is ElementOp.MOVED:
            if any(c.op is op for c in changes):
                parts.append("order changed")
            continue
        n = len({c.element for c in changes if c.op is op})
        if n:
            parts.append(f"{n} {op.value}")
    return ", ".join(parts) or "no element changed"


def _label(item: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    return ", ".join(f"{f}={json.dumps(item[f], ensure_ascii=False)}" for f in fields)


def _index(items: list[Any], fields: tuple[str, ...]) -> dict[str, Any] | None:
    """Index a keyed list by label; None when an element lacks its key or a key repeats."""
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, Mapping) or any(item.get(f) is None for f in fields):
            return None
        label = _label(item, fields)
        if label in out:
            return None
        out[label] = item
    return out


def _keyed_changes(
    old: list[Any], new: list[Any], fields: tuple[str, ...]
) -> tuple[ElementChange, ...] | None:
    before, after = _index(old, fields), _index(new, fields)
    if before is None or after is None:
        return None
    out: list[ElementChange] = []
    for label, item in after.items():
        had = before.get(label, MISSING)
        if had is MISSING:
            out.append(ElementChange(ElementOp.ADDED, label, new=item))
        elif not same(item, had):
            out.extend(
                ElementChange(ElementOp.CHANGED, label, p, b, a) for p, b, a in _leaves(item, had)
            )
    out.extend(
        ElementChange(ElementOp.REMOVED, label, old=item)
        for label, item in before.items()
        if label not in after
    )
    common_before = [label for label in before if label in after]
    common_after = [label for label in after if label in before]
    if common_before != common_after:
        out.append(ElementChange(ElementOp.MOVED, "", "", common_before, common_after))
    return tuple(out)


def _line_changes(old: list[Any], new: list[Any]) -> tuple[ElementChange, ...]:
    """A line diff (longest common subsequence, elements compared with ``same``)."""
    n, m = len(old), len(new)
    # lcs[i][j]: the longest common subsequence of old[i:] and new[j:].
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            lcs[i][j] = (
                lcs[i + 1][j + 1] + 1 if same(new[j], old[i]) else max(lcs[i + 1][j], lcs[i][j + 1])
            )
    out: list[ElementChange] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and same(new[j], old[i]):
            i, j = i + 1, j + 1
        elif j < m and (i == n or lcs[i][j + 1] >= lcs[i + 1][j]):
            out.append(ElementChange(ElementOp.ADDED, str(j), new=new[j]))
            j += 1
        else:
            out.append(ElementChange(ElementOp.REMOVED, str(i), old=old[i]))
            i += 1
    return tuple(out)


def _leaves(want: Any, have: Any) -> list[tuple[str, Any, Any]]:
    """List the fields the desired value states whose live value differs (dotted, old, new).

    deepdiff's walk with the plan's rules: numbers by value, the desired side's keys only,
    lists of the same length item by item (any other list is one value).
    """
    found = differences(have, want, numbers_by_value=True, stated_only=True, absent=MISSING)
    return [(format_path(path), before, after) for path, before, after in found]
