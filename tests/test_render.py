"""Text and markdown renderers: per-field lines, locations, summary, colour only when asked,
secrets never shown, markdown bounded to 60,000 characters with a note when details are
elided (``reconciler.plan.render``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
import pytest

from reconciler.client.live import Observed
from reconciler.model.errors import Location
from reconciler.model.resources import FixedLocator, Resource
from reconciler.model.secrets import Secret
from reconciler.plan.actions import Action, Op, Plan, Request, error_action
from reconciler.plan.dashboards import plan_dashboard
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, SecretCheck
from reconciler.plan.planners import plan_pipe
from reconciler.plan.render import (
    MARKDOWN_LIMIT,
    ansi,
    describe_change,
    render_markdown,
    render_text,
    summary_line,
    table,
)
from reconciler.state.local import DashboardRecord

SECRET_VALUE = "hunter2-Zq9-DISTINCTIVE"
KEY = b"k" * 32
WHERE = Location("pipes/orders.yaml", 14, 7)
IDS = {"organizationId": "o", "serviceId": "s", "pipeId": "p"}
LIVE = {
    "name": "orders",
    "state": "Running",
    "source": {"kafka": {"brokers": "b:9092", "iamRole": "old"}},
    "settings": {"engine_max_threads": 4},
}


def sample_plan() -> Plan:
    resource = Resource(
        "Pipe",
        "orders-from-kafka",
        {
            **IDS,
            "source": {
                "kafka": {
                    "credentials": {"username": Secret("u"), "password": Secret(SECRET_VALUE)},
                    "iamRole": "new",
                }
            },
            "settings": {"engine_max_threads": 8},
        },
        "pipes/orders.yaml",
        locator=FixedLocator(WHERE),
    )
    pipe = plan_pipe(
        resource,
        resource.spec,
        Observed(LIVE, path="/v1/organizations/o/services/s/pipes/p"),
        SecretCheck(KEY, {}),
        ids=IDS,
    )
    dash = Resource("Dashboard", "ops", {"name": "Ops", "tiles": []}, "d.yaml")
    created = plan_dashboard(dash, None, None, can_read=True, can_update=True, replace=False)
    stuck = plan_dashboard(
        Resource("Dashboard", "old", {"name": "Old"}, "d.yaml"),
        None,
        DashboardRecord("d-1", "sha256:x"),
        can_read=False,
        can_update=False,
        replace=False,
    )
    failed = error_action("Pipe", "broken", Location("pipes/b.yaml", 3, 1), "GET pipe: 404")
    return Plan(
        (pipe, created, stuck, failed),
        requests_made={"management": 4, "dashboards": 1},
        notes=("the server offers no organization GET",),
    )


def test_render_text_shows_each_field_change_with_its_location() -> None:
    text = render_text(sample_plan())
    assert "~ pipe orders-from-kafka  (pipes/orders.yaml:14:7)" in text
    assert '    ~ source.kafka.iamRole: "old" → "new"  (pipes/orders.yaml:14:7)' in text
    assert "    ~ settings.engine_max_threads: 4 → 8" in text
    assert "source.kafka.credentials: (sensitive value changed)" in text
    assert "→ PATCH /v1/organizations/o/services/s/pipes/p  [update]" in text
    assert "+ dashboard ops" in text
    assert "error: GET pipe: 404" in text
    assert "warning: changed, but not updatable through this API" in text
    assert "note: the server offers no organization GET" in text


def test_render_text_ends_with_summary_and_request_count() -> None:
    lines = render_text(sample_plan()).splitlines()
    assert lines[-2] == (
        "Plan: 1 to create, 1 to update, 0 to replace, 0 to delete, 1 unchanged (1 with warnings), "
        "1 with errors."
    )
    assert lines[-1] == "Requests made: 5 (management 4, dashboards 1)."


def test_a_pending_rename_is_counted_in_the_text_and_markdown_summaries() -> None:
    moved = Action(
        "Dashboard", "operations", Op.NOOP, WHERE, target={"id": "d-1"}, renamed_from="ops"
    )
    plan = Plan((moved, Action("Pipe", "p", Op.NOOP, WHERE)))
    line = (
        "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 to rename, 1 unchanged "
        "(0 with warnings), 0 with errors."
    )
    text = render_text(plan)
    assert text.splitlines()[-2] == line
    assert "= dashboard operations (renamed from Dashboard/ops; same live dashboard d-1)" in text
    assert "No changes" not in text
    markdown = render_markdown(plan)
    assert f"**{line}**" in markdown
    assert "| = | `Dashboard/operations` | rename (from `ops`) | 0 |" in markdown
    # Without a rename the line keeps its old shape (scripts read it).
    assert "rename" not in summary_line(Plan((Action("Pipe", "p", Op.NOOP, WHERE),)))


def test_render_text_says_no_changes_when_there_are_none() -> None:
    plan = Plan((Action("Pipe", "p", Op.NOOP, WHERE),), requests_made={"management": 2})
    text = render_text(plan)
    assert "No changes. The live state matches the manifests." in text
    assert "pipe p" not in text
    assert "= pipe p" in render_text(plan, show_unchanged=True)


def test_render_text_without_color_has_no_escape_codes() -> None:
    assert "\x1b[" not in render_text(sample_plan(), color=False)


def test_render_text_with_color_uses_escape_codes() -> None:
    assert "\x1b[" in render_text(sample_plan(), color=True)


@pytest.mark.parametrize("fg", [None, "red", "green", "yellow", "magenta", "cyan", "white"])
@pytest.mark.parametrize(("bold", "dim"), [(False, False), (True, False), (False, True)])
def test_plan_colours_are_the_codes_click_would_emit(fg: str | None, bold: bool, dim: bool) -> None:
    # The renderer never asks for "not bold" (click writes a code for an explicit False).
    expected = click.style("x", fg=fg, bold=bold or None, dim=dim or None)
    assert ansi("x", fg=fg, bold=bold, dim=dim) == expected


def test_render_text_can_hide_requests() -> None:
    assert "→ PATCH" not in render_text(sample_plan(), show_requests=False)


@pytest.mark.parametrize(
    ("kind", "old", "new", "expected"),
    [
        pytest.param(ChangeKind.SET, 4, 8, ("~", "settings.x: 4 → 8"), id="set-old-to-new"),
        pytest.param(ChangeKind.SET, MISSING, 8, ("+", "settings.x: 8"), id="set-from-absent"),
        pytest.param(
            ChangeKind.SENSITIVE,
            MISSING,
            {"password": Secret(SECRET_VALUE)},
            ("~", "settings.x: (sensitive value changed)"),
            id="sensitive-never-shows-the-value",
        ),
        pytest.param(ChangeKind.ADD, MISSING, {"a": 1}, ("+", 'settings.x: {"a": 1}'), id="add"),
        pytest.param(
            ChangeKind.REMOVE, {"a": 1}, MISSING, ("-", 'settings.x: {"a": 1}'), id="remove"
        ),
        pytest.param(
            ChangeKind.EXPECTATION,
            "a",
            "b",
            ("!", 'settings.x: "a" ≠ expected "b" (read-only)'),
            id="expectation",
        ),
        pytest.param(
            ChangeKind.SET,
            "x" * 300,
            1,
            ("~", f'settings.x: "{"x" * 98}… → 1'),
            id="long-values-are-cut",
        ),
    ],
)
def test_describe_change_reads_like_a_terraform_line(
    kind: ChangeKind, old: Any, new: Any, expected: tuple[str, str]
) -> None:
    change = FieldChange(("settings", "x"), old, new, kind, WHERE)
    assert describe_change(change) == expected


def test_no_output_format_shows_a_secret() -> None:
    plan = sample_plan()
    outputs = [
        render_text(plan),
        render_text(plan, color=True, show_unchanged=True),
        render_markdown(plan),
        render_markdown(plan, limit=2_000),
    ]
    for output in outputs:
        assert SECRET_VALUE not in output
    assert "(sensitive)" in render_markdown(plan)


def test_render_markdown_puts_the_summary_table_first_and_collapses_details() -> None:
    md = render_markdown(sample_plan())
    assert md.startswith("### reconcile plan\n")
    table_at = md.index("| | Resource | Operation | Changes | Manifest |")
    assert table_at < md.index("<details>")
    assert "| ~ | `Pipe/orders-from-kafka` | update | 3 | `pipes/orders.yaml:14` |" in md
    assert "| ! | `Pipe/broken` | error | 0 | `pipes/b.yaml:3` |" in md
    assert "```json" in md
    assert summary_line(sample_plan()) in md


def test_render_markdown_says_no_changes_when_there_are_none() -> None:
    md = render_markdown(Plan(()))
    assert "No changes. The live state matches the manifests." in md
    assert "<details>" not in md


def many_changed_pipes(count: int, body_size: int = 1) -> Plan:
    actions = []
    for i in range(count):
        where = Location("manifests/pipes/generated.yaml", i * 30 + 1, 1)
        body = {
            "fieldMappings": [
                {"sourceField": f"f{j}", "destinationField": f"d{j}"} for j in range(body_size)
            ]
        }
        actions.append(
            Action(
                "Pipe",
                f"pipe-{i:04d}",
                Op.UPDATE,
                where,
                changes=(
                    FieldChange(
                        ("fieldMappings",), [], body["fieldMappings"], ChangeKind.SET, where
                    ),
                ),
                requests=(Request("PATCH", f"/v1/organizations/o/services/s/pipes/{i}", body),),
            )
        )
    return Plan(tuple(actions), requests_made={"management": count + 1})


def test_render_markdown_stays_under_60000_characters_for_2000_changed_pipes() -> None:
    md = render_markdown(many_changed_pipes(2_000))
    assert len(md) <= MARKDOWN_LIMIT
    assert "more resources not listed to stay under 60,000 characters" in md
    assert "more resources elided to stay under 60,000 characters" in md
    assert "| ~ | `Pipe/pipe-0000` | update |" in md


def test_render_markdown_elides_bodies_first_with_a_note() -> None:
    plan = many_changed_pipes(30, body_size=40)
    full = render_markdown(plan, limit=10**7)
    assert "```json" in full
    limit = len(full) - 1
    md = render_markdown(plan, limit=limit)
    assert len(md) <= limit
    assert "```json" not in md
    assert "_(body elided:" in md
    assert "Request bodies elided to fit the comment" in md
    assert md.count("<details>") == 30


@pytest.mark.parametrize("limit", [3_000, 5_000, 20_000, 60_000])
def test_render_markdown_never_exceeds_its_limit(limit: int) -> None:
    for count in (1, 10, 100, 400):
        assert len(render_markdown(many_changed_pipes(count, body_size=5), limit=limit)) <= limit


def test_render_markdown_escapes_pipes_in_cells() -> None:
    where = Location("m.yaml", 1, 1)
    action = Action(
        "Pipe",
        "p",
        Op.UPDATE,
        where,
        changes=(FieldChange(("name",), "a|b", "c", ChangeKind.SET, where),),
        requests=(Request("PATCH", "/x", {"name": "c"}),),
    )
    assert '"a\\|b"' in render_markdown(Plan((action,)))


def test_table_aligns_columns() -> None:
    assert table([["a", 1], ["bbb", 22]], ["NAME", "N"]) == "NAME  N\na     1\nbbb   22\n"


ADOPTED_HEADS = [
    pytest.param("Pipe", {"pipeId": "p-1"}, "pipe orders (adopted by name: pipe p-1)", id="pipe"),
    pytest.param(
        "Dashboard",
        {"id": "d-1"},
        "dashboard orders (adopted by name: dashboard d-1)",
        id="dashboard",
    ),
    pytest.param(
        "ReversePrivateEndpoint",
        {"reversePrivateEndpointId": "e-1"},
        "reverse private endpoint orders (adopted by description: reverse private endpoint e-1)",
        id="endpoint",
    ),
]


@pytest.mark.parametrize(("kind", "target", "head"), ADOPTED_HEADS)
def test_an_adopted_resource_is_shown_with_its_kind_in_words_and_its_live_id(
    kind: str, target: dict[str, str], head: str
) -> None:
    action = Action(kind, "orders", Op.NOOP, Location("m.yaml", 4, 3), target=target)
    action = dataclasses.replace(action, bound="adopted", warnings=("shown",))
    assert f"= {head}" in render_text(Plan(actions=(action,)))
