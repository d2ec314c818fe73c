"""The compiled validator (jsonschema-rs) agrees with jsonschema, and messages read well.

``KindSchema.fast_check`` must say "valid" exactly when jsonschema, the authority on errors,
does, or errors would be missed. A differential test mutates the example manifests (every leaf replaced by values of
other types, out-of-range numbers, unknown keys, removed keys) and compares both verdicts.
Also covers message helpers: the closest ``oneOf`` alternative and type descriptions.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.load.schema import kind_schema
from reconciler.load.schemaerrors import describe, message_for
from reconciler.load.yamlsource import parse
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = [doc for p in sorted((EXAMPLES).rglob("*.yaml")) for doc in parse(p.read_bytes())]
ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    3.5,
    5000.0,
    10**12,
    "",
    "x",
    "12",
    [],
    [1],
    {},
    {"fromEnv": "A"},
]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*path, i))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def _mutants(doc: Any, rng: random.Random) -> Iterator[Any]:
    for path in list(_paths(doc))[1:]:
        for value in rng.sample(ODD_VALUES, 4):
            mutant = copy.deepcopy(doc)
            _set(mutant, path, copy.deepcopy(value))
            yield mutant
        parent_path = path[:-1]
        mutant = copy.deepcopy(doc)
        parent = mutant
        for part in parent_path:
            parent = parent[part]
        if isinstance(parent, dict):
            del parent[path[-1]]
            yield mutant
            extra = copy.deepcopy(doc)
            _set(extra, (*parent_path, "unknownKey"), 1)
            yield extra


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_fast_check_should_agree_with_jsonschema_on_mutants(index: int) -> None:
    doc = EXAMPLES[index]
    compiled = kind_schema(doc["kind"])
    assert compiled.fast_check(doc) and compiled.validator.is_valid(doc)
    rng = random.Random(index)
    checked = 0
    for mutant in _mutants(doc, rng):
        assert compiled.fast_check(mutant) == compiled.validator.is_valid(mutant), mutant
        checked += 1
    assert checked > 50


def test_errors_should_be_empty_for_valid_documents() -> None:
    for doc in EXAMPLES:
        assert kind_schema(doc["kind"]).errors(doc) == []


@pytest.mark.parametrize(
    ("keyword", "value", "instance", "expected"),
    [
        ("type", "integer", "12", "expected an integer, got string '12'"),
        ("type", "boolean", 1, "expected a boolean (true or false), got integer 1"),
        ("type", "string", "s3cret", "expected a string, got string 's3cret'"),
        ("maximum", 60000, 70000, "70000 is greater than the maximum of 60000"),
        ("minimum", 0.5, 0.25, "0.25 is less than the minimum of 0.5"),
        ("maxLength", 255, "x" * 300, "is too long: 300 characters, at most 255"),
        ("minLength", 1, "", "must not be empty"),
    ],
)
def test_message_for_should_describe_the_failure(
    keyword: str, value: Any, instance: Any, expected: str
) -> None:
    assert message_for(keyword, value, instance) == expected


def test_message_for_should_hide_values_when_asked() -> None:
    assert message_for("type", "object", "hunter2", hide=True) == "expected a mapping, got a string"
    assert describe("hunter2", hide=True) == "a string"


def test_project_file_fast_check_should_agree_with_jsonschema_on_mutants() -> None:
    from jsonschema import Draft202012Validator

    from reconciler.load.project import _fast_check, project_schema

    schema = project_schema()
    fast = _fast_check(schema)
    authority = Draft202012Validator(schema)
    base = parse((REPO / "reconcile.yaml").read_bytes())[0]
    rng = random.Random(7)
    docs: list[Any] = [base, {}, [], None, "x"]
    for _ in range(300):
        doc = copy.deepcopy(base)
        key = rng.choice([*base, "unknown", "rates"])
        if rng.random() < 0.2:
            doc.pop(key, None)
        elif key == "rates" and rng.random() < 0.5:
            doc["rates"] = {rng.choice(["management", "dashboards", "x"]): rng.choice(ODD_VALUES)}
        else:
            doc[key] = rng.choice([*ODD_VALUES, "none", "10/10", "bad id", "https://x", 8, 0])
        docs.append(doc)
    for doc in docs:
        assert fast(doc) == authority.is_valid(doc), doc
