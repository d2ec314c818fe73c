"""SIGINT/SIGTERM during apply, with a real subprocess and a slow emulator: no new request is
started, in-flight ones finish (a second Ctrl-C aborts them), state is saved, the usual
per-action summary lists what was not started as `skipped`, the exit status is 130 (143 for
SIGTERM), and a second apply converges."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator.seed import scale_ids, scale_service_id
from tests.cli_helpers import SECRET_ENV, pipe_spec, run_cli, settle, write_manifest, writes
from tests.conftest import Emulator

PIPES = 12


def _manifests(root: Path) -> None:
    for index in range(1, PIPES + 1):
        name, pid = scale_ids(index)
        spec = pipe_spec(pid, scale_service_id(1), settings={"engine_max_threads": 7})
        write_manifest(root / f"{name}.yaml", "Pipe", name, spec)
    tile = {
        "name": "t",
        "x": 0,
        "y": 0,
        "w": 6,
        "h": 3,
        "series": [{"type": "time", "dataSource": "events"}],
    }
    write_manifest(root / "dash.yaml", "Dashboard", "ops", {"name": "Ops", "tiles": [tile]})


def _start_apply(emulator: Emulator, root: Path, state: Path) -> subprocess.Popen[str]:
    args = [
        "apply",
        str(root),
        "--auto-approve",
        "--state",
        str(state),
        "--rate",
        "none",
        "--parallelism",
        "2",
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        env={
            **os.environ,
            **SECRET_ENV,
            **emulator.env(),
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_writes(emulator: Emulator, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(writes(emulator.requests())) < count:
        time.sleep(0.02)
    assert len(writes(emulator.requests())) >= count, "apply never started writing"


def _converges(emulator: Emulator, root: Path, state: Path) -> None:
    # Requests the interrupted run left on the wire still land on the server: wait for them
    # (else they land in the next test, or after this test's checks).
    settle(emulator)
    emulator.configure(latencyMs=0)
    again = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert again.exit_code == 0, again.output
    plan = run_cli(
        ["plan", str(root), "--detailed-exitcode", "--state", str(state)], emulator.env()
    )
    assert plan.exit_code == 0, plan.output
    dashboards: list[Any] = list(emulator.data()["dashboards"].values())
    assert len(dashboards) == 1


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_during_apply_stops_new_requests_reports_skipped_and_converges_later(
    emulator: Emulator, tmp_path: Path, signum: int, code: int
) -> None:
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    emulator.configure(latencyMs=300)
    proc = _start_apply(emulator, root, state)
    _wait_for_writes(emulator, 1)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, out + err
    sent = len(writes(emulator.requests()))
    assert sent < PIPES + 1, "every request was sent: the signal did not stop new ones"
    name = signal.Signals(signum).name
    assert f"Apply interrupted by {name}" in out
    assert " skipped" in out and "not started" in out
    assert "Traceback" not in err
    _converges(emulator, root, state)


def test_a_second_ctrl_c_aborts_requests_in_flight(emulator: Emulator, tmp_path: Path) -> None:
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    emulator.configure(latencyMs=3_000)
    proc = _start_apply(emulator, root, state)
    _wait_for_writes(emulator, 2)  # two requests in flight, each answering after 3 s
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    # Only an abort before the answers came makes an action "uncertain" (else it is applied).
    assert "uncertain" in out and "aborted while in flight" in out
    assert "Apply interrupted by SIGINT" in out
    _converges(emulator, root, state)
