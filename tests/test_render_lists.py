"""List changes in plan output, element by element: keyed lists (tiles, fieldMappings,
columns, table mappings) as added / removed / changed elements with the changed fields, other
lists as a compact line diff, never cut before the difference; in text, markdown and the JSON
plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.model.errors import Location
from reconciler.plan.actions import Action, Op, Plan
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange
from reconciler.plan.planfile import dumps
from reconciler.plan.render import render_markdown, render_text
from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
WHERE = Location("dashboards/overview.yaml", 9, 3)


def tile(name: str, x: int, where: str) -> dict[str, Any]:
    return {
        "name": name,
        "x": x,
        "y": 0,
        "w": 12,
        "h": 4,
        "series": [{"type": "time", "dataSource": "events", "aggFn": "count", "where": where}],
    }


def plan_of(*changes: FieldChange, kind: str = "Dashboard") -> Plan:
    action = Action(kind, "overview", Op.UPDATE, WHERE, changes=tuple(changes))
    return Plan(actions=(action,))


def both(plan: Plan) -> tuple[str, str]:
    return render_text(plan, show_requests=False), render_markdown(plan)


def test_a_change_inside_the_second_tile_is_shown_with_the_tile_name_and_field() -> None:
    old = [tile("Invoices per minute", 0, "service:billing"), tile("Insert errors", 12, "a:b")]
    new = [tile("Invoices per minute", 0, "service:billing"), tile("Insert errors", 12, "a:c")]
    text, markdown = both(plan_of(FieldChange(("tiles",), old, new, ChangeKind.SET, WHERE)))
    assert 'tiles[name="Insert errors"].series[0].where: "a:b" → "a:c"' in text
    assert "Invoices per minute" not in text  # an unchanged tile is not shown
    assert "…" not in text
    assert 'tiles[name="Insert errors"].series[0].where' in markdown
    assert '"a:b"' in markdown and '"a:c"' in markdown
    assert "…" not in markdown


def test_added_removed_and_changed_tiles_are_listed_as_such() -> None:
    old = [tile("A", 0, "x"), tile("B", 12, "y")]
    new = [tile("A", 6, "x"), tile("C", 0, "z")]
    text, _ = both(plan_of(FieldChange(("tiles",), old, new, ChangeKind.SET, WHERE)))
    assert "~ tiles: 1 added, 1 removed, 1 changed" in text
    assert 'tiles[name="A"].x: 0 → 6' in text
    assert '+ tiles[name="C"]: {"name": "C", "x": 0' in text
    assert '- tiles[name="B"]: {"name": "B", "x": 12' in text


@pytest.mark.parametrize(
    ("path", "old", "new", "expected"),
    [
        pytest.param(
            ("fieldMappings",),
            [
                {"sourceField": "id", "destinationField": "id"},
                {"sourceField": "amount", "destinationField": "amount"},
            ],
            [
                {"sourceField": "order_id", "destinationField": "id"},
                {"sourceField": "amount", "destinationField": "amount"},
                {"sourceField": "ts", "destinationField": "created_at"},
            ],
            [
                'fieldMappings[destinationField="id"].sourceField: "id" → "order_id"',
                '+ fieldMappings[destinationField="created_at"]: {"sourceField": "ts", '
                '"destinationField": "created_at"}',
            ],
            id="fieldMappings by destinationField",
        ),
        pytest.param(
            ("destination", "columns"),
            [{"name": "id", "type": "UInt64"}, {"name": "note", "type": "String"}],
            [{"name": "id", "type": "Int64"}],
            [
                'destination.columns[name="id"].type: "UInt64" → "Int64"',
                '- destination.columns[name="note"]: {"name": "note", "type": "String"}',
            ],
            id="columns by name",
        ),
        pytest.param(
            ("source", "kafka", "reversePrivateEndpointIds"),
            ["e-1", "e-2", "e-3"],
            ["e-1", "e-3", "e-4"],
            [
                '- source.kafka.reversePrivateEndpointIds[1]: "e-2"',
                '+ source.kafka.reversePrivateEndpointIds[2]: "e-4"',
            ],
            id="other lists as a line diff",
        ),
    ],
)
def test_list_changes_are_shown_element_by_element(
    path: tuple[str, ...], old: list[Any], new: list[Any], expected: list[str]
) -> None:
    text, markdown = both(plan_of(FieldChange(path, old, new, ChangeKind.SET, WHERE), kind="Pipe"))
    for line in expected:
        assert line in text, text
    assert '"e-1"' not in text  # unchanged elements are not repeated
    assert "…" not in text and "…" not in markdown


def test_reordered_tiles_are_an_order_change_not_a_remove_and_add() -> None:
    old = [tile("A", 0, "x"), tile("B", 12, "y")]
    text, markdown = both(plan_of(FieldChange(("tiles",), old, old[::-1], ChangeKind.SET, WHERE)))
    assert "~ tiles: order changed" in text
    assert '~ tiles: order [name="A", name="B"] → [name="B", name="A"]' in text
    assert "order [name=" in markdown


def test_a_table_mapping_whose_fields_changed_is_one_changed_element() -> None:
    key = "source.postgres.tableMappings"
    at = ("source", "postgres", "tableMappings", "public.orders → orders")
    old = {"sourceSchemaName": "public", "sourceTable": "orders", "targetTable": "orders"}
    new = {**old, "tableEngine": "ReplacingMergeTree"}
    text, markdown = both(
        plan_of(
            FieldChange(at, dict(old), MISSING, ChangeKind.REMOVE, WHERE),
            FieldChange(at, dict(old), new, ChangeKind.ADD, WHERE),
            kind="Pipe",
        )
    )
    assert f"~ {key}[public.orders → orders].tableEngine: (absent) → " in text
    assert '"ReplacingMergeTree"' in text
    assert "- source.postgres" not in text  # the remove half of the edit is not a second line
    assert "tableEngine" in markdown


def test_a_long_string_is_never_cut_before_its_difference() -> None:
    old = "level:error " + "service:pipes " * 12 + "region:eu"
    new = "level:error " + "service:pipes " * 12 + "region:us"
    text, markdown = both(
        plan_of(FieldChange(("name",), old, new, ChangeKind.SET, WHERE), kind="Dashboard")
    )
    assert "region:eu" in text and "region:us" in text
    assert "region:eu" in markdown and "region:us" in markdown


def test_the_json_plan_carries_the_element_changes_and_stays_valid() -> None:
    old = [tile("A", 0, "x"), tile("B", 12, "y")]
    new = [tile("A", 6, "x")]
    doc = json.loads(dumps(plan_of(FieldChange(("tiles",), old, new, ChangeKind.SET, WHERE))))
    schema = json.loads((REPO / "schemas" / "plan.schema.json").read_text())
    Draft202012Validator(schema).validate(doc)
    elements = doc["actions"][0]["changes"][0]["elements"]
    assert {"change": "changed", "element": 'name="A"', "path": "x", "old": 0, "new": 6} in elements
    assert any(e["change"] == "removed" and e["element"] == 'name="B"' for e in elements)


def test_plan_of_a_changed_tile_shows_the_tile_and_field_in_text_and_markdown(
    emulator: Emulator, tmp_path: Path
) -> None:
    source = (EXAMPLES / "dashboards" / "pipes-overview.yaml").read_text()
    manifest = tmp_path / "overview.yaml"
    manifest.write_text(source)
    state = ["--state", str(tmp_path / "s.json")]
    applied = run_cli(["apply", str(manifest), "--auto-approve", *state], emulator.env())
    assert applied.exit_code == 0, applied.output
    manifest.write_text(source.replace('"level:error service:pipes"', '"level:warn service:pipes"'))
    for output in ("text", "markdown"):
        result = run_cli(["plan", str(manifest), "-o", output, *state], emulator.env())
        assert result.exit_code == 0, result.output
        assert 'tiles[name="Insert errors"].series[0].where' in result.stdout
        assert "level:error service:pipes" in result.stdout
        assert "level:warn service:pipes" in result.stdout
        if output == "text":  # (markdown also shows the request body: the whole tiles list)
            assert "Events per minute" not in result.stdout
