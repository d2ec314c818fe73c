"""Pure planning of a pipe's run state and scaling: state commands after the update, one
scaling request of the changed fields, stop → edit → start around paused-only edits,
transitional states as converging (never drift), expectations on servers without the
lifecycle endpoints, and how plans with them render, round-trip and verify."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.apply.verify import unconverged
from reconciler.client.live import Observed
from reconciler.client.paths import PipeIds
from reconciler.plan import planfile
from reconciler.plan.actions import Action, Op, Plan, Purpose
from reconciler.plan.diff import ChangeKind, SecretCheck
from reconciler.plan.planners import plan_pipe
from reconciler.plan.render import render_markdown, render_text
from tests.support.plan_inputs import (
    IDS,
    KAFKA_LIVE,
    PIPE_PATH,
    pg_live,
    pg_spec,
    pipe_resource,
    tm,
)

STATE = PipeIds.from_target(IDS).state_path
SCALING = PipeIds.from_target(IDS).scaling_path
NO_SECRETS = SecretCheck(b"k" * 32, {})
SCALED = {"replicas": 2, "concurrency": 2, "replicaCpuMillicores": 500, "replicaMemoryGb": 2}


def plan(spec: dict[str, Any], live: dict[str, Any], *, lifecycle: bool = True) -> Action:
    resource = pipe_resource(spec)
    observed = Observed(live=live, path=PIPE_PATH)
    return plan_pipe(resource, resource.spec, observed, NO_SECRETS, ids=IDS, lifecycle=lifecycle)


def steps(action: Action) -> list[tuple[str, Any]]:
    return [(r.path.rsplit("/", 1)[-1], r.body) for r in action.requests]


def kafka(state: str, **extra: Any) -> dict[str, Any]:
    return {**KAFKA_LIVE, "state": state, "scaling": dict(SCALED), **extra}


STOP = ("state", {"command": "stop"})
START = ("state", {"command": "start"})

RUN_STATE_CASES = [
    pytest.param("Running", "Stopped", [START], ChangeKind.COMMAND, id="stopped-to-running"),
    pytest.param("Stopped", "Running", [STOP], ChangeKind.COMMAND, id="running-to-stopped"),
    pytest.param("Stopped", "Paused", [], None, id="paused-satisfies-stopped"),
    pytest.param("Running", "Running", [], None, id="already-running"),
    pytest.param("Running", "Provisioning", [], ChangeKind.CONVERGING, id="provisioning-converges"),
    pytest.param("Stopped", "Pausing", [], ChangeKind.CONVERGING, id="pausing-converges"),
    pytest.param("Stopped", "Stopping", [], ChangeKind.CONVERGING, id="stopping-converges"),
    pytest.param("Running", "Resync", [], ChangeKind.CONVERGING, id="resync-converges"),
    pytest.param("Stopped", "Provisioning", [STOP], ChangeKind.COMMAND, id="provisioning-to-stop"),
    pytest.param("Running", "Failed", [START], ChangeKind.COMMAND, id="failed-is-started"),
]


@pytest.mark.parametrize(("desired", "live", "expected", "kind"), RUN_STATE_CASES)
def test_a_desired_run_state_is_reached_with_the_state_command(
    desired: str, live: str, expected: list[Any], kind: ChangeKind | None
) -> None:
    action = plan({"state": desired}, kafka(live))
    assert steps(action) == expected
    assert [c.kind for c in action.changes] == ([kind] if kind else [])
    assert action.errors == ()
    assert action.has_changes is bool(expected)
    assert all(r.purpose is Purpose.STATE_COMMAND for r in action.requests)


def test_a_converging_pipe_is_not_drift() -> None:
    action = plan({"state": "Stopped"}, kafka("Stopping"))
    assert action.operation is Op.NOOP
    assert Plan((action,)).summary()["unchanged"] == 1
    assert 'state: "Stopping", converging to "Stopped" (nothing to send)' in render_text(
        Plan((action,))
    )


def test_the_state_command_comes_after_the_update_and_the_scaling() -> None:
    action = plan(
        {"state": "Running", "settings": {"engine_max_threads": 8}, "scaling": {"replicas": 4}},
        kafka("Stopped"),
    )
    assert steps(action) == [
        ("pipe-1", {"settings": {"engine_max_threads": 8}}),
        ("scaling", {"replicas": 4}),
        START,
    ]


@pytest.mark.parametrize(
    ("scaling", "body"),
    [
        pytest.param({"replicas": 4}, {"replicas": 4}, id="one-field"),
        pytest.param(
            {"replicas": 2, "replicaCpuMillicores": 1000, "replicaMemoryGb": 4.5},
            {"replicaCpuMillicores": 1000, "replicaMemoryGb": 4.5},
            id="only-the-changed-fields",
        ),
        pytest.param({"replicaMemoryGb": 2.0}, None, id="2.0-equals-2"),
    ],
)
def test_scaling_is_one_request_of_the_changed_fields(
    scaling: dict[str, Any], body: dict[str, Any] | None
) -> None:
    action = plan({"scaling": scaling}, kafka("Running"))
    assert steps(action) == ([("scaling", body)] if body else [])
    assert all(r.purpose is Purpose.SCALING and r.idempotent for r in action.requests)
    assert all(c.kind is ChangeKind.SET for c in action.changes)


PAUSE_CASES = [
    pytest.param({}, "Running", [STOP, "edit", START], id="unstated-running:stop-edit-start"),
    pytest.param(
        {"state": "Running"}, "Running", [STOP, "edit", START], id="running:stop-edit-start"
    ),
    pytest.param({"state": "Stopped"}, "Running", [STOP, "edit"], id="stopped:stop-edit"),
    pytest.param({"state": "Running"}, "Paused", ["edit", START], id="paused:edit-start"),
    pytest.param({}, "Paused", ["edit"], id="paused-unstated:edit"),
    pytest.param({"state": "Stopped"}, "Paused", ["edit"], id="paused-stopped:edit"),
]


@pytest.mark.parametrize(("extra", "live_state", "expected"), PAUSE_CASES)
def test_a_table_mapping_edit_is_made_while_the_pipe_is_paused(
    extra: dict[str, Any], live_state: str, expected: list[Any]
) -> None:
    action = plan(pg_spec([tm("a"), tm("b")], **extra), pg_live([tm("a")], state=live_state))
    edit = ("pipe-1", {"source": {"postgres": {"tableMappingsToAdd": [tm("b")]}}})
    assert steps(action) == [edit if s == "edit" else s for s in expected]
    assert action.errors == ()
    if expected[0] == STOP and expected[-1] == START:
        assert any("stopped, edited, then started again" in w for w in action.warnings)


def test_a_stop_edit_start_plan_depends_on_the_live_state_even_when_unstated() -> None:
    # A saved plan applied after someone paused the pipe must not start it: the basis says so.
    action = plan(pg_spec([tm("a"), tm("b")]), pg_live([tm("a")], state="Running"))
    assert action.basis["state"] == "Running"


@pytest.mark.parametrize("state", ["Pausing", "Provisioning", "Failed", "Stopped"])
def test_a_table_mapping_edit_on_a_pipe_that_cannot_be_paused_now_is_an_error(state: str) -> None:
    action = plan(pg_spec([tm("a"), tm("b")]), pg_live([tm("a")], state=state))
    assert action.operation is Op.ERROR and action.requests == ()
    assert f"it is {state}" in action.errors[0]


def test_a_completed_pipe_cannot_be_started() -> None:
    action = plan({"state": "Running"}, kafka("Completed"))
    assert action.operation is Op.ERROR
    assert "Completed: it cannot be started or stopped" in action.errors[0]


@pytest.mark.parametrize("value", ["Degraded", "Paused", "Provisioning"])
def test_other_state_values_stay_expectations(value: str) -> None:
    action = plan({"state": value}, kafka("Running"))
    assert action.operation is Op.ERROR
    assert [c.kind for c in action.changes] == [ChangeKind.EXPECTATION]


def test_an_expected_paused_state_says_to_write_stopped_where_the_state_command_exists() -> None:
    action = plan({"state": "Paused"}, kafka("Running"))
    assert action.operation is Op.ERROR
    assert "cannot be changed through the API" not in action.errors[0]
    assert "write `state: Stopped`" in action.errors[0]
    spec_only = plan({"state": "Paused"}, kafka("Running"), lifecycle=False)
    assert "write `state: Stopped`" not in spec_only.errors[0]


def test_without_the_lifecycle_endpoints_state_and_scaling_are_expectations() -> None:
    action = plan(
        {"state": "Stopped", "scaling": {"replicas": 4}}, kafka("Running"), lifecycle=False
    )
    assert action.operation is Op.ERROR and action.requests == ()
    assert {c.kind for c in action.changes} == {ChangeKind.EXPECTATION}
    assert len(action.errors) == 2


def test_without_the_lifecycle_endpoints_a_scaling_reset_is_an_expectation() -> None:
    action = plan({"scaling": {"replicas": None}}, kafka("Running"), lifecycle=False)
    assert action.operation is Op.ERROR
    assert [c.kind for c in action.changes] == [ChangeKind.EXPECTATION]


def test_without_the_lifecycle_endpoints_a_mapping_edit_says_where_and_to_pause() -> None:
    action = plan(pg_spec([tm("a"), tm("b")]), pg_live([tm("a")], state="Running"), lifecycle=False)
    assert action.operation is Op.ERROR
    (error,) = action.errors
    assert error.startswith(
        "table mappings (m.yaml:6:1) can only be edited while the pipe is Paused"
    )
    assert "pause the pipe, apply, then resume it" in error


# -- what the plan shows and keeps -------------------------------------------------------------


def lifecycle_plan() -> Plan:
    stop_edit_start = plan(pg_spec([tm("a"), tm("b")]), pg_live([tm("a")], state="Running"))
    scaled = plan({"state": "Stopped", "scaling": {"replicas": 4}}, kafka("Running"))
    converging = plan({"state": "Running"}, kafka("Provisioning"))
    return Plan(
        (
            stop_edit_start,
            dataclasses.replace(scaled, name="scaled"),
            dataclasses.replace(converging, name="new"),
        )
    )


def test_the_text_plan_shows_commands_scaling_and_the_pause_sequence() -> None:
    text = render_text(lifecycle_plan())
    assert f"→ PATCH {STATE}  [state command: stop]" in text
    assert f"→ PATCH {STATE}  [state command: start]" in text
    assert f"→ PATCH {SCALING}  [scaling]" in text
    assert 'state: "Running" → "Stopped" (state command)' in text
    assert "scaling.replicas: 2 → 4" in text
    assert "converging to" in text
    lines = text.splitlines()
    first = lines.index(next(line for line in lines if "[state command: stop]" in line))
    assert "[add table mappings]" in lines[first + 1] or "[update]" in lines[first + 1]
    assert "Plan: 0 to create, 2 to update" in text


def test_the_markdown_plan_shows_the_state_commands_in_order() -> None:
    text = render_markdown(lifecycle_plan())
    stop = text.index(f"`PATCH {STATE}` (state command: stop)")
    start = text.index(f"`PATCH {STATE}` (state command: start)")
    assert stop < text.index(f"`PATCH {PIPE_PATH}` (update)") < start
    assert '"command": "stop"' in text


def test_a_lifecycle_plan_round_trips_through_the_plan_file(tmp_path: Path) -> None:
    original = lifecycle_plan()
    path = tmp_path / "plan.json"
    path.write_text(planfile.dumps(original), encoding="utf-8")
    loaded = planfile.load(path)
    for before, after in zip(original.actions, loaded.actions, strict=True):
        assert after.requests == before.requests
        assert [(c.path, c.kind, c.old, c.new) for c in after.changes] == [
            (c.path, c.kind, c.old, c.new) for c in before.changes
        ]
        assert after.basis_hash == before.basis_hash
    document = json.loads(path.read_text())
    kinds = {c["kind"] for a in document["actions"] for c in a["changes"]}
    assert {"command", "converging"} <= kinds


def test_verify_checks_the_run_state_only_when_apply_waited_for_it() -> None:
    action = plan({"state": "Stopped"}, kafka("Running"))
    assert unconverged(action, kafka("Stopped")) == []
    assert unconverged(action, kafka("Paused")) == []
    assert unconverged(action, kafka("Stopping")) == [
        "state is 'Stopping' after the state command, expected Stopped"
    ]
    assert unconverged(action, kafka("Stopping"), waited=False) == []


def test_a_degraded_pipe_that_should_run_is_a_warning_not_a_restart() -> None:
    action = plan({"state": "Running"}, kafka("Degraded"))
    assert action.operation is Op.NOOP and action.requests == ()
    assert action.warnings and "Degraded" in action.warnings[0]
    assert steps(plan({"state": "Stopped"}, kafka("Degraded"))) == [STOP]
