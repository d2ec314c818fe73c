"""How one field change reads, for people: values and list changes, never cut before the difference.

A value is shown on one line within a width; when two long values differ only far into them,
both are shown from a little before their first difference. A changed list reads element by
element (``listdiff``): the tile, mapping or column that changed, with its changed fields, and
whole elements added or removed in full. The text and markdown renderers both use this.
"""

from __future__ import annotations

import json

from reconciler.model.fields import is_secret_path
from reconciler.model.json import as_items
from reconciler.model.secrets import redact
from reconciler.plan.actions import Action
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, FieldValue, Missing
from reconciler.plan.listdiff import ElementChange, ElementOp, counts, field_changes, list_changes

__all__: list[str] = []


_VALUE_WIDTH = 100


def value_text(value: FieldValue, width: int = _VALUE_WIDTH) -> str:
    if isinstance(value, Missing):
        return "(absent)"
    text = json.dumps(redact(value), ensure_ascii=False, separators=(", ", ": "))
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text


def full_text(value: FieldValue) -> str:
    """A value in full, on one line (an element of a list: the whole of it is the change)."""
    if isinstance(value, Missing):
        return "(absent)"
    return json.dumps(redact(value), ensure_ascii=False, separators=(", ", ": "))


def value_pair(old: FieldValue, new: FieldValue, width: int = _VALUE_WIDTH) -> tuple[str, str]:
    """Show two values within ``width`` each, never cutting before the first difference.

    When the first difference lies beyond the width, both are shown from a little before it
    (``…`` marks what was left out on either side).
    """
    a, b = full_text(old), full_text(new)
    if len(a) <= width and len(b) <= width:
        return a, b
    common = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    start = common - width // 4 if common > width // 2 else 0
    return _window(a, start, width), _window(b, start, width)


def _window(text: str, start: int, width: int) -> str:
    head = "…" if start > 0 else ""
    body = text[start:]
    if len(head) + len(body) > width:
        body = body[: max(1, width - len(head) - 1)] + "…"
    return head + body


def reset_text(default: FieldValue) -> str:
    shown = "unset" if default is None else value_text(default)
    return f"reset to default ({shown})"


def describe_change(change: FieldChange, *, creating: bool = False) -> tuple[str, str]:
    """Return (sign, text) describing one field change for people (``creating``: a field of a
    create body, whose secret is sent, not changed)."""
    if change.kind is ChangeKind.SENSITIVE:
        if creating:
            return "+", f"{change.dotted}: (sensitive value)"
        return "~", f"{change.dotted}: (sensitive value changed)"
    if change.kind is ChangeKind.REPLACE and is_secret_path(change.path):
        return "-/+", f"{change.dotted}: (sensitive value changed) (must be replaced)"
    if change.kind is ChangeKind.REPLACE:
        before, after = value_pair(change.old, change.new)
        return "-/+", f"{change.dotted}: {before} → {after} (must be replaced)"
    if change.kind is ChangeKind.COMMAND:
        before, after = value_pair(change.old, change.new)
        return "~", f"{change.dotted}: {before} → {after} (state command)"
    if change.kind is ChangeKind.CONVERGING:
        before, after = value_pair(change.old, change.new)
        return "…", f"{change.dotted}: {before}, converging to {after} (nothing to send)"
    if change.kind is ChangeKind.ADD:
        return "+", f"{change.dotted}: {value_text(change.new)}"
    if change.kind is ChangeKind.REMOVE:
        return "-", f"{change.dotted}" + (
            f": {value_text(change.old)}" if change.old is not MISSING else ""
        )
    if change.kind is ChangeKind.RESET:
        if change.old is MISSING:  # e.g. a write-only secret: what it was is never known
            return "~", f"{change.dotted}: {reset_text(change.new)}"
        return "~", f"{change.dotted}: {value_text(change.old)} → {reset_text(change.new)}"
    if change.kind is ChangeKind.EXPECTATION:
        before, after = value_pair(change.old, change.new)
        return "!", f"{change.dotted}: {before} ≠ expected {after} (read-only)"
    if change.old is MISSING:
        return "+", f"{change.dotted}: {value_text(change.new)}"
    before, after = value_pair(change.old, change.new)
    return "~", f"{change.dotted}: {before} → {after}"


ElementLine = tuple[str, str, FieldValue, FieldValue]  # sign, field, old, new (MISSING: not shown)


def expand_change(
    change: FieldChange, readded: frozenset[str] = frozenset()
) -> tuple[tuple[str, str], list[ElementLine]] | None:
    """Return a list change as a heading (sign, text) and one line per element change.

    None for a change that is one line (``describe_change``); an empty heading text for the
    remove half of an item sent as remove + add (``readded``: its paths), shown with its add.
    """
    if change.kind is ChangeKind.REMOVE and change.dotted in readded:
        return ("", ""), []
    if change.kind is ChangeKind.ADD and change.old is not MISSING:
        fields = field_changes(change.old, change.new)
        heading = "changed (removed and added again: the service only adds and removes these)"
        return ("~", f"{change.dotted}: {heading}"), [
            _element_line(change.dotted, c) for c in fields
        ]
    if change.kind is not ChangeKind.SET:
        return None
    elements = list_changes(change.path, change.old, change.new)
    if not elements:
        return None
    return ("~", f"{change.dotted}: {counts(elements)}"), [
        _element_line(change.dotted, c) for c in elements
    ]


def _element_line(dotted: str, change: ElementChange) -> ElementLine:
    at = f"{dotted}[{change.element}]" if change.element else dotted
    if change.path:
        at = f"{at}.{change.path}" if not change.path.startswith("[") else at + change.path
    if change.op is ElementOp.ADDED:
        return "+", at, MISSING, change.new
    if change.op is ElementOp.REMOVED:
        return "-", at, change.old, MISSING
    if change.op is ElementOp.MOVED:  # the labels, as written: [name="A", name="B"]
        before, after = (", ".join(map(str, as_items(v))) for v in (change.old, change.new))
        return "~", f"{dotted}: order [{before}] → [{after}]", MISSING, MISSING
    return "~", at, change.old, change.new


def element_text(line: ElementLine) -> str:
    """Render one element line: ``+ tiles[name="A"]: {…}``, ``~ …x: 0 → 6`` (never cut)."""
    sign, at, old, new = line
    if old is MISSING and new is MISSING:
        return f"{sign} {at}"
    if old is MISSING and sign == "+":
        return f"{sign} {at}: {full_text(new)}"
    if new is MISSING and sign == "-":
        return f"{sign} {at}: {full_text(old)}"
    before, after = value_pair(old, new)
    return f"{sign} {at}: {before} → {after}"


def readded_paths(action: Action) -> frozenset[str]:
    """Return the items an action removes and adds again (their fields changed)."""
    return frozenset(
        c.dotted for c in action.changes if c.kind is ChangeKind.ADD and c.old is not MISSING
    )
