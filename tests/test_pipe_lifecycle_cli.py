"""Run state and scaling through the real command line against an emulator on a port: stop,
start, scale, a postgres table-mapping edit on a running pipe (stop → edit → start),
``--no-wait``, a pipe that goes ``Failed`` while apply waits, and ``--wait-timeout`` expiry."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.cli import SECRET_ENV, pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import KAFKA_PIPE, POSTGRES_RUNNING_PIPE, STAGING

REPO = Path(__file__).resolve().parent.parent


def _args(command: str, tmp_path: Path, *extra: str) -> list[str]:
    args = [command, str(tmp_path / "m"), "--state", str(tmp_path / "s.json"), *extra]
    return [*args, "--auto-approve"] if command == "apply" else args


def pipe(emulator: Emulator, pipe_id: str) -> dict[str, Any]:
    found: dict[str, Any] = emulator.data()["pipes"][pipe_id]
    return found


def commands(emulator: Emulator) -> list[tuple[str, Any]]:
    return [(w["path"].rsplit("/", 1)[-1], w.get("body")) for w in writes(emulator.requests())]


def test_stop_start_and_scale_through_the_cli(emulator: Emulator, tmp_path: Path) -> None:
    manifest = tmp_path / "m" / "orders.yaml"
    write_manifest(manifest, "Pipe", "orders", pipe_spec(state="Stopped"))
    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert planned.exit_code == 2, planned.output
    assert 'state: "Running" → "Stopped" (state command)' in planned.stdout
    assert "[state command: stop]" in planned.stdout
    stopped = run_cli(_args("apply", tmp_path), emulator.env())
    assert stopped.exit_code == 0, stopped.output
    assert "stop: Stopped after" in stopped.stdout
    assert "/state [state command: stop]: applied (200)" in stopped.stdout
    assert pipe(emulator, KAFKA_PIPE)["state"] == "Stopped"
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output

    write_manifest(manifest, "Pipe", "orders", pipe_spec(state="Running"))
    started = run_cli(_args("apply", tmp_path), emulator.env())
    assert started.exit_code == 0, started.output
    assert pipe(emulator, KAFKA_PIPE)["state"] == "Running"

    write_manifest(manifest, "Pipe", "orders", pipe_spec(state="Running", scaling={"replicas": 4}))
    scaled = run_cli(_args("apply", tmp_path), emulator.env())
    assert scaled.exit_code == 0, scaled.output
    assert pipe(emulator, KAFKA_PIPE)["scaling"]["replicas"] == 4
    assert commands(emulator) == [
        ("state", {"command": "stop"}),
        ("state", {"command": "start"}),
        ("scaling", {"replicas": 4}),
    ]
    final = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert final.exit_code == 0, final.output


def test_a_mapping_edit_on_a_running_postgres_pipe_is_stop_edit_start(
    emulator: Emulator, tmp_path: Path
) -> None:
    live = pipe(emulator, POSTGRES_RUNNING_PIPE)
    kept = live["source"]["postgres"]["tableMappings"][:-1]
    spec = pipe_spec(POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": kept}})
    write_manifest(tmp_path / "m" / "billing.yaml", "Pipe", "billing", spec)
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    lines = [line for line in planned.stdout.splitlines() if "→ PATCH" in line]
    assert [line.rsplit("[", 1)[-1] for line in lines] == [
        "state command: stop]",
        "update]",
        "state command: start]",
    ], planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    assert [c[0] for c in commands(emulator)] == ["state", POSTGRES_RUNNING_PIPE, "state"]
    after = pipe(emulator, POSTGRES_RUNNING_PIPE)
    assert after["state"] == "Running"
    assert len(after["source"]["postgres"]["tableMappings"]) == len(kept)


def test_no_wait_leaves_the_pipe_moving_and_the_plan_calls_it_converging(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(transitionMs=60_000)
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(state="Stopped"))
    applied = run_cli(_args("apply", tmp_path, "--no-wait"), emulator.env())
    assert applied.exit_code == 0, applied.output
    assert "not waited for (--no-wait); the pipe is Stopping" in applied.stdout
    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert planned.exit_code == 0, planned.output
    assert 'state: "Stopping", converging to "Stopped"' in planned.stdout


def test_wait_timeout_expiry_is_an_error_naming_the_state(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(transitionMs=60_000)
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(state="Stopped"))
    applied = run_cli(_args("apply", tmp_path, "--wait-timeout", "1.5"), emulator.env())
    assert applied.exit_code == 1, applied.output
    assert "pipe orders is still Stopping" in applied.stdout
    assert "(--wait-timeout 1.5s)" in applied.stdout
    # Not a terminal: a plain progress line on stderr instead of a bar.
    assert "waiting for 1 pipe(s): pipe orders Stopping → Paused/Stopped" in applied.stderr


def test_the_project_file_sets_the_wait_timeout(emulator: Emulator, tmp_path: Path) -> None:
    emulator.configure(transitionMs=60_000)
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(state="Stopped"))
    project = tmp_path / "reconcile.yaml"
    project.write_text("waitTimeout: 1.5\n")
    env = {**emulator.env(), "RECONCILE_CONFIG": str(project)}
    shown = run_cli(["config"], env)
    assert "waitTimeout" in shown.stdout and "reconcile.yaml:1" in shown.stdout, shown.output
    applied = run_cli(_args("apply", tmp_path), env)
    assert applied.exit_code == 1, applied.output
    assert "pipe orders is still Stopping" in applied.stdout
    assert "(--wait-timeout 1.5s)" in applied.stdout


def test_a_pipe_that_goes_failed_while_apply_waits_is_an_error(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(transitionMs=60_000)
    emulator.set_pipe_state(KAFKA_PIPE, "Stopped")
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(state="Running"))
    env = {**os.environ, **SECRET_ENV, **emulator.env(), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "reconciler", *_args("apply", tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 30
        while pipe(emulator, KAFKA_PIPE)["state"] != "Provisioning":
            assert time.monotonic() < deadline, "the start command never arrived"
            time.sleep(0.05)
        emulator.set_pipe_state(KAFKA_PIPE, "Failed")
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, stdout + stderr
    assert "Pipe/orders: failed" in stdout
    assert "pipe orders is Failed after `start`" in stdout


def test_a_saved_plan_with_a_state_command_applies_once(emulator: Emulator, tmp_path: Path) -> None:
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", pipe_spec(state="Stopped"))
    saved = tmp_path / "plan.json"
    planned = run_cli(_args("plan", tmp_path, "--out", str(saved)), emulator.env())
    assert planned.exit_code == 0, planned.output
    state = ["--state", str(tmp_path / "s.json")]
    applied = run_cli(["apply", "--plan", str(saved), *state, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    assert pipe(emulator, KAFKA_PIPE)["state"] == "Stopped"
    again = run_cli(["apply", "--plan", str(saved), *state, "--auto-approve"], emulator.env())
    assert again.exit_code == 0, again.output
    assert "already applied" in again.stdout
    assert commands(emulator) == [("state", {"command": "stop"})]


def test_a_saved_plan_is_stale_once_someone_else_stopped_the_pipe_it_would_stop_and_edit(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": []}})
    write_manifest(tmp_path / "m" / "billing.yaml", "Pipe", "billing", spec)
    saved = tmp_path / "plan.json"
    assert run_cli(_args("plan", tmp_path, "--out", str(saved)), emulator.env()).exit_code == 0
    emulator.set_pipe_state(POSTGRES_RUNNING_PIPE, "Paused")  # paused by hand meanwhile
    state = ["--state", str(tmp_path / "s.json")]
    applied = run_cli(["apply", "--plan", str(saved), *state, "--auto-approve"], emulator.env())
    assert applied.exit_code == 1, applied.output
    assert "state changed from 'Running' to 'Paused'" in applied.output
    assert commands(emulator) == []
