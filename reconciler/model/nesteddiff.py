"""A generic nested diff of two JSON values, on deepdiff: the differing leaves, in document order.

For what people read rather than what a plan sends: environment ``compare``, the changed
fields inside a list's elements in a plan, the fields a saved plan's object moved by, and the
post-apply convergence report. ``differences(old, new)`` walks both values with deepdiff and
returns each differing leaf as ``(path, old, new)`` — the path as keys and indexes, a side
that lacks the leaf as ``absent`` — ordered as the new value states its keys, then the keys
only the old one has. Three rules choose the semantics a caller needs:

- ``lists``: which pairs of lists are compared item by item (the others are one value,
  reported whole when they differ, as a manifest replaces a list whole);
- ``numbers_by_value``: 5000 equals 5000.0 (never a boolean: ``true`` is not ``1``);
- ``stated_only``: only the keys the new side states count (a key only the old side has,
  such as a server-assigned id, is no difference).

The plan's own managed-field walk (``plan.pipediff``) is not this: it is hot and carries
semantics a generic diff does not model (``plan.diff`` says which serves where).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from reconciler.model.resources import JsonPath

if TYPE_CHECKING:
    from deepdiff import DeepDiff
    from deepdiff.model import DiffLevel

__all__ = ["differences", "same_length_objects", "whole_lists"]


# Which pairs of lists are compared item by item (the others: one value).
ListRule = Callable[[list[object], list[object]], bool]
# A differing leaf: its path, its old value and its new one (``absent`` where a side lacks it).
Difference = tuple[JsonPath, object, object]


def whole_lists(old: list[object], new: list[object]) -> bool:
    """Never walk a list: a list that differs is one difference."""
    return False


def same_length(old: list[object], new: list[object]) -> bool:
    """Walk two lists of the same length item by item."""
    return len(old) == len(new)


def same_length_objects(old: list[object], new: list[object]) -> bool:
    """Walk two lists of the same length whose items are all mappings (tiles, mappings)."""
    return len(old) == len(new) and all(isinstance(x, Mapping) for x in (*old, *new))


def differences(
    old: object,
    new: object,
    *,
    lists: ListRule = same_length,
    numbers_by_value: bool = False,
    stated_only: bool = False,
    absent: object = None,
) -> list[Difference]:
    """Return the leaves where ``old`` and ``new`` differ: ``(path, old, new)``, in order."""
    rules = _Rules(lists, numbers_by_value, stated_only)
    from deepdiff.helper import NotPresent

    found = [
        (
            path,
            absent if isinstance(before, NotPresent) else before,
            absent if isinstance(after, NotPresent) else after,
        )
        for path, before, after in rules.leaves(old, new)
    ]
    return sorted(found, key=lambda d: _position(old, new, d[0]))


class _Rules:
    """One comparison's rules, turned into deepdiff's options and operators."""

    def __init__(self, lists: ListRule, numbers_by_value: bool, stated_only: bool) -> None:
        self.lists = lists
        self.numbers_by_value = numbers_by_value
        self.stated_only = stated_only

    def leaves(self, old: object, new: object, *, walk_all: bool = False) -> list[Difference]:
        """Return the differing leaves (unordered; absent sides as deepdiff's ``notpresent``)."""
        from deepdiff import DeepDiff

        booleans_apart, whole_lists = _operators()
        operators: list[Any] = [booleans_apart()]
        if not walk_all:
            operators.append(whole_lists(self))
        diff = DeepDiff(
            old,
            new,
            view="tree",
            ignore_order=False,
            # Only keys and items: never "most keys differ, so the whole mapping differs".
            threshold_to_diff_deeper=0,
            ignore_type_in_groups=[(int, float)] if self.numbers_by_value else None,
            custom_operators=operators,
        )
        out: list[Difference] = []
        for report, levels in diff.tree.items():
            if self.stated_only and report in ("dictionary_item_removed", "iterable_item_removed"):
                continue  # only the old side has it: not stated, not compared
            for level in levels:
                path = tuple(level.path(output_format="list"))
                out.append((path, level.t1, level.t2))
        return out

    def differ(self, old: object, new: object) -> bool:
        """Tell whether two values differ under these rules, lists walked item by item."""
        return bool(self.leaves(old, new, walk_all=True))


# Any: deepdiff's operator classes, built on first use (see _operators).
@cache
def _operators() -> tuple[Any, Any]:
    """Return deepdiff's two custom operators of this module, importing deepdiff then.

    deepdiff takes ~0.3 s to import (it brings pydantic): a plan whose lists have no changed
    element, and a run with nothing to compare, never pay it.
    """
    from deepdiff.operator import BaseOperator

    class WholeLists(BaseOperator):
        """Compares the lists the rule does not walk as one value."""

        def __init__(self, rules: _Rules) -> None:
            super().__init__()
            self.rules = rules

        def match(self, level: DiffLevel) -> bool:
            old, new = level.t1, level.t2
            return (
                isinstance(old, list) and isinstance(new, list) and not self.rules.lists(old, new)
            )

        def give_up_diffing(self, level: DiffLevel, diff_instance: DeepDiff) -> bool:
            if self.rules.differ(level.t1, level.t2):
                diff_instance.custom_report_result("values_changed", level)  # type: ignore[no-untyped-call]
            return True

    class BooleansApart(BaseOperator):
        """Keeps ``true`` apart from ``1`` even where numbers compare by value."""

        def match(self, level: DiffLevel) -> bool:
            old, new = level.t1, level.t2
            return isinstance(old, bool) != isinstance(new, bool) and all(
                isinstance(v, bool | int | float) for v in (old, new)
            )

        def give_up_diffing(self, level: DiffLevel, diff_instance: DeepDiff) -> bool:
            diff_instance.custom_report_result("type_changes", level)  # type: ignore[no-untyped-call]
            return True

    return BooleansApart, WholeLists


def _position(old: object, new: object, path: JsonPath) -> tuple[int, ...]:
    """Order a path as the new side states its keys, then the keys only the old side has."""
    key: list[int] = []
    for part in path:
        if isinstance(new, list) or isinstance(old, list):
            key.append(part if isinstance(part, int) else 0)
        else:
            stated = list(new) if isinstance(new, Mapping) else []
            extra = [k for k in old if k not in stated] if isinstance(old, Mapping) else []
            order = [*stated, *extra]
            key.append(order.index(part) if part in order else len(order))
        old, new = _child(old, part), _child(new, part)
    return tuple(key)


def _child(value: object, part: str | int) -> object:
    if isinstance(value, Mapping):
        return value.get(part)
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return None
