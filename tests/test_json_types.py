"""The JSON helpers of ``reconciler.model.json``: reading a member that should be an object or array."""

from __future__ import annotations

import pytest

from reconciler.model.json import as_items, as_mapping


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": 1}, {"a": 1}),
        ({}, {}),
        (None, {}),
        ("text", {}),
        ([{"a": 1}], {}),
        (0, {}),
    ],
)
def test_as_mapping_reads_an_object_as_itself_and_anything_else_as_empty(
    value: object, expected: object
) -> None:
    assert as_mapping(value) == expected


def test_as_mapping_returns_the_same_object_without_copying_it() -> None:
    body = {"source": {"kafka": {}}}
    assert as_mapping(body) is body


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, "a", None], [1, "a", None]),
        ((1, 2), (1, 2)),
        ([], []),
        (None, ()),
        ("abc", ()),  # a string is a scalar here, never a sequence of characters
        ({"a": 1}, ()),
        (3, ()),
    ],
)
def test_as_items_reads_an_array_as_itself_and_anything_else_as_empty(
    value: object, expected: object
) -> None:
    assert as_items(value) == expected
