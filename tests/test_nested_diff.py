"""The generic nested diff (``reconciler.model.nesteddiff``): leaves in document order, and the
rules each reader of it chooses — strict types for environment compare, numbers by value and
the desired side's keys for a plan's list elements, whole lists for a saved plan's report."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.nesteddiff import (
    differences,
    same_length,
    same_length_objects,
    whole_lists,
)

ABSENT = "<absent>"


@pytest.mark.parametrize(
    ("old", "new", "rules", "expected"),
    [
        # changed, removed, added leaves; the new side's key order, then the old side's own keys
        (
            {"a": 1, "b": {"c": 2, "d": 3}, "e": [1]},
            {"f": None, "a": 1.0, "b": {"c": 5}, "e": [1, 2]},
            {"lists": whole_lists, "numbers_by_value": True},
            [
                (("f",), ABSENT, None),
                (("b", "c"), 2, 5),
                (("b", "d"), 3, ABSENT),
                (("e",), [1], [1, 2]),
            ],
        ),
        # numbers by value: 5000 is 5000.0, but true is never 1
        (
            {"n": 5000, "b": 1},
            {"n": 5000.0, "b": True},
            {"numbers_by_value": True},
            [(("b",), 1, True)],
        ),
        # strict types (environment compare): 5 is not 5.0, "1" is not 1
        (
            {"n": 5, "s": "1"},
            {"n": 5.0, "s": 1},
            {},
            [(("n",), 5, 5.0), (("s",), "1", 1)],
        ),
        # same-length lists of mappings walked item by item; any other list is one value
        (
            {"tiles": [{"w": 4}, {"w": 6}], "tags": ["a"]},
            {"tiles": [{"w": 4}, {"w": 8}], "tags": ["a", "b"]},
            {"lists": same_length_objects},
            [(("tiles", 1, "w"), 6, 8), (("tags",), ["a"], ["a", "b"])],
        ),
        (
            {"tiles": [{"w": 4}], "xs": [1, 2]},
            {"tiles": [{"w": 4}, {"w": 1}], "xs": [1, 3]},
            {"lists": same_length_objects},
            [(("tiles",), [{"w": 4}], [{"w": 4}, {"w": 1}]), (("xs",), [1, 2], [1, 3])],
        ),
        # stated only: a key only the old (live) side has is no difference, inside lists too
        (
            {"columns": [{"name": "a", "id": 7}], "extra": 1},
            {"columns": [{"name": "a"}]},
            {"lists": same_length, "stated_only": True},
            [],
        ),
        # a whole list that differs only in what the rules ignore is equal
        (
            {"xs": [{"n": 5000, "id": 1}]},
            {"xs": [{"n": 5000.0}]},
            {"lists": whole_lists, "numbers_by_value": True, "stated_only": True},
            [],
        ),
        # a mapping replaced by a list (or a scalar) is one difference at its path
        ({"a": {"b": 1}}, {"a": [1]}, {}, [(("a",), {"b": 1}, [1])]),
        # most keys different: still reported key by key, never the whole mapping
        (
            {"a": 1, "b": 2, "c": 3},
            {"x": 1, "y": 2, "c": 3},
            {},
            [(("x",), ABSENT, 1), (("y",), ABSENT, 2), (("a",), 1, ABSENT), (("b",), 2, ABSENT)],
        ),
        ({"a": {"b": 5000}}, {"a": {"b": 5000.0}}, {"numbers_by_value": True}, []),
    ],
)
def test_differences_follow_the_rules_asked_for(
    old: Any, new: Any, rules: dict[str, Any], expected: list[Any]
) -> None:
    assert differences(old, new, absent=ABSENT, **rules) == expected
