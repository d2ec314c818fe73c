"""The short ways of ``same``, ``canonical``, ``project`` and the pipe walk give what the
general definitions give, on random JSON-like values (with bools, integral floats, big
integers, NaN, str and dict subclasses and non-string keys), and the walk's per-path memo does
not carry one pipe's answer over to another."""

from __future__ import annotations

import hashlib
import json
import math
from collections import UserDict
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.model.resources import Resource
from reconciler.plan.diff import SecretCheck, canonical, content_hash, project, same
from reconciler.plan.pipediff import diff_pipe


class Label(str):
    """A str subclass (what a YAML loader may hand over)."""


def reference_same(desired: Any, live: Any) -> bool:
    # ``same`` as it was defined before its short ways (one general recursion).
    if isinstance(desired, bool) or isinstance(live, bool):
        return isinstance(desired, bool) and isinstance(live, bool) and desired == live
    if isinstance(desired, int | float) and isinstance(live, int | float):
        return float(desired) == float(live)
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        return all(k in live and reference_same(v, live[k]) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return False
        return all(reference_same(d, v) for d, v in zip(desired, live, strict=True))
    return bool(desired == live) and type(desired) is type(live)


def reference_canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): reference_canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference_canonical(v) for v in value]
    return value


def reference_project(live: Any, shape: Any) -> Any:
    if isinstance(shape, Mapping) and isinstance(live, Mapping):
        return {k: reference_project(live[k], v) for k, v in shape.items() if k in live}
    return live


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=2**53 - 2, max_value=2**53 + 2),
    st.sampled_from([2**64 + 1, -(2**70)]),
    st.sampled_from([0.0, 1.0, -2.0, 0.5, 2.0**53, 1e300, math.inf, math.nan]),
    st.sampled_from(["a", "b", "1", ""]),
    st.sampled_from(["a", "b"]).map(Label),
)
keys = st.sampled_from(["a", "b", "c"])
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(keys, inner, max_size=3),
        st.dictionaries(keys, inner, max_size=2).map(UserDict),
    ),
    max_leaves=8,
)


EDGES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    2**53,
    2**53 + 1,
    2**64 + 1,
    0.0,
    1.0,
    0.5,
    2.0**53,
    math.inf,
    math.nan,
    "a",
    "1",
    Label("a"),
    [],
    [1],
    [1.0],
    {},
    {"a": 1},
    {"a": 1.0, "b": None},
    UserDict({"a": 1}),
]


def test_same_should_agree_with_its_general_definition_on_every_pair_of_edge_values() -> None:
    for desired in EDGES:
        for live in EDGES:
            assert same(desired, live) is reference_same(desired, live), (desired, live)


@settings(max_examples=400, deadline=None)
@given(values, values)
def test_same_should_agree_with_its_general_definition(desired: Any, live: Any) -> None:
    assert same(desired, live) is reference_same(desired, live)
    assert same(desired, desired) is reference_same(desired, desired)


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(values)
def test_canonical_and_content_hash_should_agree_with_their_general_definition(value: Any) -> None:
    plain = json.loads(json.dumps(value, default=dict))  # what a decoded answer holds
    for item in (value, plain):
        assert _text(canonical(item)) == _text(reference_canonical(item))
    expected = hashlib.sha256(_text(reference_canonical(plain)).encode()).hexdigest()
    assert content_hash(plain) == f"sha256:{expected}"
    assert canonical({1: 2.0, None: [3.0]}) == {"1": 2, "None": [3]}


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_project_should_agree_with_its_general_definition(live: Any, shape: Any) -> None:
    assert _text_or_repr(project(live, shape)) == _text_or_repr(reference_project(live, shape))


def _text_or_repr(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=lambda v: repr(dict(v)))


def test_pipe_walk_memo_should_not_carry_one_pipes_answer_to_another() -> None:
    check = SecretCheck(b"k" * 32, {})
    first = Resource("Pipe", "one", {"name": "x", "settings": {"a": 1}}, "one.yaml")
    second = Resource("Pipe", "two", {"name": "y", "settings": {"a": 2, "b": True}}, "two.yaml")
    live = {"name": "x", "settings": {"a": 1, "b": False}}
    assert diff_pipe(first, first.spec, live, check) == []
    changes = diff_pipe(second, second.spec, live, check)
    assert [(c.path, c.old, c.new) for c in changes] == [
        (("name",), "x", "y"),
        (("settings", "a"), 1, 2),
        (("settings", "b"), False, True),
    ]
    # Non-string keys are not remembered: 1 and True are one dict key but two paths.
    for key in (1, True, 1):
        odd = Resource("Pipe", "odd", {"settings": {key: "a"}}, "odd.yaml")
        (change,) = diff_pipe(odd, odd.spec, {"settings": {}}, check)
        assert type(change.path[1]) is type(key)
