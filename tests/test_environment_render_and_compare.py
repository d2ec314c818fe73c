"""Rendering an environment's effective manifests and comparing two environments.

``render_yaml`` must print a YAML stream that loads back to the same documents, each headed
by its source files, with secret references as written; ``compare`` must list resources in
one environment only and every differing field by path (table-driven).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from reconciler.load.effective import (
    Presence,
    compare,
    render_comparison_json,
    render_comparison_text,
    render_json,
    render_yaml,
)
from reconciler.load.overlays import Effective
from reconciler.model.resources import Resource


def effective(kind: str, name: str, spec: dict[str, Any], *files: str) -> Effective:
    doc = {"apiVersion": "reconcile/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    return Effective(kind, name, doc, files or ("base/x.yaml",), Resource(kind, name, spec, "x"))


SECRET = {"credentials": {"password": {"fromEnv": "KAFKA_PASSWORD"}}}


def test_render_yaml_heads_each_document_with_its_sources_and_loads_back() -> None:
    manifests = [
        effective("Pipe", "orders", {"name": "orders", **SECRET}, "base/o.yaml", "ov/o.yaml"),
        effective("Dashboard", "qa", {"name": "QA", "tags": ["a"]}, "ov/qa.yaml"),
    ]
    text = render_yaml(manifests)
    assert text.startswith("# Source: base/o.yaml, ov/o.yaml\napiVersion: reconcile/v1\n")
    assert "---\n# Source: ov/qa.yaml\n" in text
    assert "fromEnv: KAFKA_PASSWORD" in text
    loaded = list(YAML(typ="safe").load_all(text))
    assert loaded == [m.document for m in manifests]


def test_render_json_is_one_document_with_sources() -> None:
    body = json.loads(render_json([effective("Pipe", "orders", SECRET)], "staging"))
    assert body["environment"] == "staging"
    assert body["manifests"][0]["sources"] == ["base/x.yaml"]
    assert body["manifests"][0]["manifest"]["spec"] == SECRET


TILE = {"name": "t", "x": 0, "y": 0, "w": 12, "h": 4}

COMPARE_CASES: list[
    tuple[str, list[Effective], list[Effective], list[tuple[str, str, list[str]]]]
] = [
    ("identical", [effective("Pipe", "p", {"a": 1})], [effective("Pipe", "p", {"a": 1})], []),
    (
        "only_in_a_and_only_in_b",
        [effective("Dashboard", "qa", {"name": "QA"})],
        [effective("Dashboard", "prod", {"name": "P"})],
        [("Dashboard/prod", "onlyB", []), ("Dashboard/qa", "onlyA", [])],
    ),
    (
        "scalar_differs_and_key_absent_on_one_side",
        [effective("Pipe", "p", {"scaling": {"replicas": 1}, "x": True})],
        [effective("Pipe", "p", {"scaling": {"replicas": 4}})],
        [("Pipe/p", "both", ["spec.scaling.replicas", "spec.x"])],
    ),
    (
        "list_of_mappings_walked_item_by_item",
        [effective("Dashboard", "d", {"tiles": [TILE, TILE]})],
        [effective("Dashboard", "d", {"tiles": [TILE, {**TILE, "w": 24}]})],
        [("Dashboard/d", "both", ["spec.tiles[1].w"])],
    ),
    (
        "list_of_scalars_is_one_value",
        [effective("Dashboard", "d", {"tags": ["a", "b"]})],
        [effective("Dashboard", "d", {"tags": ["a"]})],
        [("Dashboard/d", "both", ["spec.tags"])],
    ),
    (
        "integer_and_boolean_are_not_equal",
        [effective("Pipe", "p", {"v": 1})],
        [effective("Pipe", "p", {"v": True})],
        [("Pipe/p", "both", ["spec.v"])],
    ),
]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [case[1:] for case in COMPARE_CASES],
    ids=[case[0] for case in COMPARE_CASES],
)
def test_compare_lists_every_difference(
    a: list[Effective], b: list[Effective], expected: list[tuple[str, str, list[str]]]
) -> None:
    result = compare("staging", a, "production", b)
    got = [(d.key, str(d.presence), [f.path for f in d.fields]) for d in result.resources]
    assert got == expected
    assert result.differs == bool(expected)


def test_compare_text_reads_as_a_promotion_from_a_to_b() -> None:
    result = compare(
        "staging",
        [effective("Pipe", "p", {"scaling": {"replicas": 1}}), effective("Dashboard", "qa", {})],
        "production",
        [effective("Pipe", "p", {"scaling": {"replicas": 4}})],
    )
    text = render_comparison_text(result)
    assert "Promoting staging to production would change production's desired state:" in text
    assert "+ Dashboard/qa  (only in staging: base/x.yaml)" in text
    assert "    spec.scaling.replicas: production 4 -> staging 1" in text
    assert result.resources[0].presence is Presence.ONLY_A


def test_compare_json_leaves_out_an_absent_side() -> None:
    result = compare("a", [effective("Pipe", "p", {"x": 1})], "b", [effective("Pipe", "p", {})])
    body = json.loads(render_comparison_json(result, 2))
    assert body["resources"][0]["fields"] == [{"path": "spec.x", "a": 1}]
    assert body["exitCode"] == 2


def test_compare_text_when_nothing_differs() -> None:
    one = [effective("Pipe", "p", {})]
    assert render_comparison_text(compare("a", one, "b", one)) == (
        "a and b have the same effective manifests (1 resources).\n"
    )
