"""Applying run states and scaling against the emulator app (``httpx.ASGITransport``): stop,
start and scale reach the server and converge; a postgres table-mapping edit on a running pipe
is stop → edit → start in that order; waits end on the desired state, on ``Failed`` (an error
naming it) or on the timeout; ``--no-wait`` leaves the last state moving; polling reads one
pipe list per service per round; a spec-only server keeps them expectations."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import reconciler
from reconciler.apply.results import Outcome
from reconciler.apply.waiting import Waiting, WaitOptions
from reconciler.emulator import EmulatorApp
from reconciler.emulator import lifecycle as emulated
from reconciler.model.apierrors import AuthenticationFailed
from tests.support.asgi import config, emulator_app
from tests.support.cli import pipe_spec, write_manifest
from tests.support.pipes import kafka_spec
from tests.support.seed_ids import (
    ANALYTICS,
    KAFKA_PIPE,
    OBJECT_STORAGE_PIPE,
    POSTGRES_RUNNING_PIPE,
    STAGING,
)

FAST = WaitOptions(first_interval=0.02, max_interval=0.05)


def app_with(transition_ms: int = 40, **config_: Any) -> EmulatorApp:
    return emulator_app(transition_ms=transition_ms, **config_)


def live(app: EmulatorApp, pipe_id: str) -> dict[str, Any]:
    pipe: dict[str, Any] = app.runtime.store.data["pipes"][pipe_id]
    return pipe


def force_state(app: EmulatorApp, pipe_id: str, state: str) -> None:
    """What ``POST /_emulator/pipes/{id}/state`` does: set the state, end any transition."""
    live(app, pipe_id)["state"] = state
    emulated.forget(app.runtime.store.data, pipe_id)


def writes(app: EmulatorApp) -> list[tuple[str, str, Any]]:
    return [
        (e["method"], e["path"].rsplit("/", 1)[-1], e.get("body"))
        for e in app.runtime.log
        if e["method"] != "GET"
    ]


def apply(
    app: EmulatorApp,
    manifests: Path,
    tmp_path: Path,
    *,
    wait: WaitOptions = FAST,
    waiting: Callable[[tuple[Waiting, ...]], None] | None = None,
) -> reconciler.ApplyResult:
    scope = reconciler.Scope(paths=(str(manifests),), state=str(tmp_path / "state.json"))
    hooks = reconciler.ApplyHooks(
        confirm=reconciler.AUTO_APPROVE, waiting=waiting or (lambda pending: None)
    )
    request = reconciler.ApplyRequest(scope, wait=wait)
    transport = httpx.ASGITransport(app=app)
    return asyncio.run(reconciler.apply_plan(config(), request, hooks, transport=transport))


def plan_again(app: EmulatorApp, manifests: Path, tmp_path: Path) -> reconciler.PlanResult:
    scope = reconciler.Scope(paths=(str(manifests),), state=str(tmp_path / "state.json"))
    transport = httpx.ASGITransport(app=app)
    return asyncio.run(reconciler.compute_plan(config(), scope, transport=transport))


def kafka_manifest(tmp_path: Path, **fields: Any) -> Path:
    return write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(**fields))


def only(result: reconciler.ApplyResult) -> Any:
    (action,) = [r for r in result.results if r.key.startswith("Pipe/")]
    return action


def test_stop_waits_for_stopped_and_the_next_plan_has_no_changes(tmp_path: Path) -> None:
    app = app_with()
    manifests = kafka_manifest(tmp_path, state="Stopped")
    result = apply(app, manifests, tmp_path)
    action = only(result)
    assert action.outcome is Outcome.APPLIED, action.messages
    assert live(app, KAFKA_PIPE)["state"] == "Stopped"
    assert writes(app) == [("PATCH", "state", {"command": "stop"})]
    assert any(m.startswith("stop: Stopped after") for m in action.messages)
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())


def test_start_after_an_update_waits_for_running(tmp_path: Path) -> None:
    app = app_with()
    force_state(app, KAFKA_PIPE, "Stopped")
    manifests = kafka_manifest(tmp_path, state="Running", settings={"engine_max_threads": 7})
    result = apply(app, manifests, tmp_path)
    assert only(result).outcome is Outcome.APPLIED
    assert [(m, p) for m, p, _ in writes(app)] == [("PATCH", KAFKA_PIPE), ("PATCH", "state")]
    assert live(app, KAFKA_PIPE)["state"] == "Running"
    assert live(app, KAFKA_PIPE)["settings"]["engine_max_threads"] == 7


def test_scaling_sends_only_the_changed_fields_once(tmp_path: Path) -> None:
    app = app_with()
    manifests = kafka_manifest(tmp_path, scaling={"replicas": 4, "replicaCpuMillicores": 500})
    assert only(apply(app, manifests, tmp_path)).outcome is Outcome.APPLIED
    assert writes(app) == [("PATCH", "scaling", {"replicas": 4})]
    assert live(app, KAFKA_PIPE)["scaling"]["replicas"] == 4
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())


def test_a_scaling_reset_converges_on_the_services_default(tmp_path: Path) -> None:
    app = app_with()
    manifests = kafka_manifest(tmp_path, scaling={"replicaMemoryGb": None})
    assert only(apply(app, manifests, tmp_path)).outcome is Outcome.APPLIED
    assert writes(app) == [("PATCH", "scaling", {"replicaMemoryGb": None})]
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())


def test_a_postgres_mapping_edit_on_a_running_pipe_is_stop_edit_start(tmp_path: Path) -> None:
    app = app_with()
    mappings = [*live(app, POSTGRES_RUNNING_PIPE)["source"]["postgres"]["tableMappings"]]
    added = {"sourceSchemaName": "public", "sourceTable": "refunds", "targetTable": "refunds"}
    spec = pipe_spec(
        POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": [*mappings, added]}}
    )
    manifests = write_manifest(tmp_path / "m" / "cdc.yaml", "Pipe", "cdc", spec)
    result = apply(app, manifests, tmp_path)
    assert only(result).outcome is Outcome.APPLIED, only(result).messages
    assert writes(app) == [
        ("PATCH", "state", {"command": "stop"}),
        ("PATCH", POSTGRES_RUNNING_PIPE, {"source": {"postgres": {"tableMappingsToAdd": [added]}}}),
        ("PATCH", "state", {"command": "start"}),
    ]
    pipe = live(app, POSTGRES_RUNNING_PIPE)
    assert pipe["state"] == "Running"
    assert added["sourceTable"] in [
        m["sourceTable"] for m in pipe["source"]["postgres"]["tableMappings"]
    ]
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())


def test_the_edit_waits_for_paused_even_with_no_wait(tmp_path: Path) -> None:
    app = app_with()
    spec = pipe_spec(
        POSTGRES_RUNNING_PIPE,
        STAGING,
        state="Stopped",
        source={"postgres": {"tableMappings": []}},
    )
    manifests = write_manifest(tmp_path / "m" / "cdc.yaml", "Pipe", "cdc", spec)
    result = apply(app, manifests, tmp_path, wait=WaitOptions(wait=False, first_interval=0.02))
    assert only(result).outcome is Outcome.APPLIED, only(result).messages
    assert writes(app)[0][2] == {"command": "stop"}
    assert len(writes(app)) == 2  # stop, edit: the pipe is to stay stopped
    assert live(app, POSTGRES_RUNNING_PIPE)["state"] == "Paused"


def test_no_wait_returns_while_the_pipe_is_still_moving(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)
    manifests = kafka_manifest(tmp_path, state="Stopped")
    result = apply(app, manifests, tmp_path, wait=WaitOptions(wait=False))
    action = only(result)
    assert action.outcome is Outcome.APPLIED
    assert "stop: sent, not waited for (--no-wait); the pipe is Stopping" in action.messages
    assert live(app, KAFKA_PIPE)["state"] == "Stopping"
    # Converging is not drift: the next plan has nothing to change.
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())
    assert [c.kind for c in again.actions[0].changes] == ["converging"]


def test_a_pipe_that_goes_failed_is_an_error_naming_the_state(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)
    force_state(app, KAFKA_PIPE, "Stopped")

    def fail_it(pending: tuple[Waiting, ...]) -> None:
        force_state(app, KAFKA_PIPE, "Failed")

    manifests = kafka_manifest(tmp_path, state="Running")
    result = apply(app, manifests, tmp_path, waiting=fail_it)
    action = only(result)
    assert action.outcome is Outcome.FAILED
    assert action.messages[0].startswith("pipe orders is Failed after `start` (waited ")
    assert result.exit_code == 1


def test_a_wait_timeout_is_an_error_naming_the_state(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)
    manifests = kafka_manifest(tmp_path, state="Stopped")
    result = apply(app, manifests, tmp_path, wait=WaitOptions(timeout=0.2, first_interval=0.05))
    action = only(result)
    assert action.outcome is Outcome.FAILED
    assert "pipe orders is still Stopping" in action.messages[0]
    assert "(--wait-timeout 0.2s)" in action.messages[0]


def test_a_timeout_before_the_edit_sends_neither_edit_nor_start(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)
    spec = pipe_spec(POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": []}})
    manifests = write_manifest(tmp_path / "m" / "cdc.yaml", "Pipe", "cdc", spec)
    result = apply(app, manifests, tmp_path, wait=WaitOptions(timeout=0.2, first_interval=0.05))
    action = only(result)
    assert action.outcome is Outcome.FAILED
    assert [r.outcome for r in action.requests] == [
        Outcome.APPLIED,
        Outcome.SKIPPED,
        Outcome.SKIPPED,
    ]
    assert writes(app) == [("PATCH", "state", {"command": "stop"})]


def test_waiting_reads_one_pipe_list_per_service_per_round(tmp_path: Path) -> None:
    app = app_with(transition_ms=300)
    kafka_manifest(tmp_path, state="Stopped")
    write_manifest(
        tmp_path / "m" / "files.yaml",
        "Pipe",
        "files",
        pipe_spec(OBJECT_STORAGE_PIPE, ANALYTICS, state="Stopped"),
    )
    result = apply(app, tmp_path / "m", tmp_path)
    assert [r.outcome for r in result.results] == [Outcome.APPLIED, Outcome.APPLIED]
    log = [(e["method"], e["path"]) for e in app.runtime.log]
    first_command = next(i for i, (m, _) in enumerate(log) if m == "PATCH")
    polls = [p for m, p in log[first_command:] if m == "GET"]
    assert polls, "the waits polled"
    assert all(p.endswith(f"/services/{ANALYTICS}/pipes") for p in polls)


def test_a_spec_only_server_keeps_state_and_scaling_expectations(tmp_path: Path) -> None:
    app = app_with(spec_only=True)
    manifests = kafka_manifest(tmp_path, state="Stopped", scaling={"replicas": 4})
    result = apply(app, manifests, tmp_path)
    assert result.exit_code == 1
    (action,) = result.plan.actions
    assert len(action.errors) == 2 and all("cannot be changed" in e for e in action.errors)
    assert writes(app) == []


@pytest.mark.parametrize("state", ["Pausing", "Provisioning"])
def test_a_command_planned_on_a_moving_pipe_waits_for_it_to_settle_first(
    tmp_path: Path, state: str
) -> None:
    app = app_with(transition_ms=40)
    pipe = live(app, KAFKA_PIPE)
    # Moving towards Running (as after a create): the plan stops it once it gets there.
    emulated.begin(app.runtime.store.data, pipe, (state, "Running"), app.runtime.store.clock())
    manifests = kafka_manifest(tmp_path, state="Stopped")
    result = apply(app, manifests, tmp_path)
    assert only(result).outcome is Outcome.APPLIED, only(result).messages
    assert live(app, KAFKA_PIPE)["state"] == "Stopped"


@pytest.fixture(autouse=True)
def _kafka_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_USER", "returns-reader")
    monkeypatch.setenv("KAFKA_PASSWORD", "kafka-pass-SECRETVALUE")


def created_manifest(tmp_path: Path, **extra: Any) -> Path:
    spec = kafka_spec(**extra)
    return write_manifest(tmp_path / "m" / "returns.yaml", "Pipe", "returns", spec)


def by_name(app: EmulatorApp, name: str) -> dict[str, Any]:
    (pipe,) = [p for p in app.runtime.store.data["pipes"].values() if p["name"] == name]
    return pipe


def test_a_create_waits_until_the_pipe_is_running(tmp_path: Path) -> None:
    app = app_with()
    manifests = created_manifest(tmp_path)
    action = only(apply(app, manifests, tmp_path))
    assert action.outcome is Outcome.APPLIED, action.messages
    assert any(m.startswith("create: Running after") for m in action.messages)
    assert by_name(app, "returns")["state"] == "Running"


def test_a_create_of_a_stopped_pipe_stops_it_once_it_runs(tmp_path: Path) -> None:
    app = app_with()
    manifests = created_manifest(tmp_path, state="Stopped", scaling={"replicas": 3})
    planned = plan_again(app, manifests, tmp_path).plan.actions[0]
    assert [(r.method, r.path.split("/pipes")[-1]) for r in planned.requests] == [
        ("POST", ""),
        ("PATCH", "/{created-id}/state"),
    ]
    action = only(apply(app, manifests, tmp_path))
    assert action.outcome is Outcome.APPLIED, action.messages
    pipe = by_name(app, "returns")
    assert pipe["state"] == "Stopped" and pipe["scaling"]["replicas"] == 3
    assert [(m, p, b) for m, p, b in writes(app)][1] == ("PATCH", "state", {"command": "stop"})
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ())


def test_a_create_with_no_wait_returns_while_it_provisions(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)
    manifests = created_manifest(tmp_path)
    action = only(apply(app, manifests, tmp_path, wait=WaitOptions(wait=False)))
    assert action.outcome is Outcome.APPLIED, action.messages
    assert "create: sent, not waited for (--no-wait); the pipe is Provisioning" in action.messages


def test_a_create_whose_wait_fails_still_records_the_secrets_it_sent(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)

    def fail_it(pending: tuple[Waiting, ...]) -> None:
        force_state(app, by_name(app, "returns")["id"], "Failed")

    manifests = created_manifest(tmp_path)
    action = only(apply(app, manifests, tmp_path, waiting=fail_it))
    assert action.outcome is Outcome.FAILED
    assert action.messages[0].startswith("pipe returns is Failed after `create`")
    force_state(app, by_name(app, "returns")["id"], "Running")  # someone repaired it
    again = plan_again(app, manifests, tmp_path).plan
    assert (again.changed, again.failed) == ((), ()), [a.changes for a in again.actions]


def test_refused_credentials_while_waiting_stop_the_run(tmp_path: Path) -> None:
    app = app_with(transition_ms=60_000)

    def revoke(pending: tuple[Waiting, ...]) -> None:
        app.api.identities = revoked_keys()

    manifests = kafka_manifest(tmp_path, state="Stopped")
    with pytest.raises(AuthenticationFailed):
        apply(app, manifests, tmp_path, waiting=revoke)


def revoked_keys() -> Any:
    from reconciler.emulator import Identities

    return Identities.from_env({"RECONCILE_KEY_ID": "other", "RECONCILE_KEY_SECRET": "other"})
