"""Chaos: `reconcile apply` killed with SIGKILL at random moments under injected faults converges.

Against the emulator with 20 % injected faults (503, 502, dropped connections) and a little
latency, ``apply`` subprocesses over 60 pipes and 3 dashboards are each killed at a random
moment — after a random number (0 to 12) of further writes reached the server, or a random
time when none come — ``KILLS`` times (bounded: the loop also stops after ``TIME_BOUND`` seconds). Then,
faults off, one clean apply must finish; a plan must show no changes; the emulator must hold
exactly the 3 dashboards (none created twice by a run killed between its POST and its state
write); and the state file must be valid and point at exactly those dashboards. The seed of
the kill moments is printed, so a failure can be replayed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from reconciler.state.local import load_state
from tests.support.cli import (
    SECRET_ENV,
    apply_args,
    plan_code,
    run_cli,
    scale_manifests,
    settle,
    writes,
)
from tests.support.emulator import Emulator

KILLS = 10
TIME_BOUND = 40.0  # seconds of killing at most; the whole test stays well under a minute
PIPES = 60
DASHBOARDS = 3


@pytest.mark.slow
def test_random_sigkills_under_faults_should_converge_with_exact_dashboards_and_valid_state(
    emulator: Emulator, tmp_path: Path
) -> None:
    seed = int(os.environ.get("RECONCILE_CHAOS_SEED", "14"))
    rng = random.Random(seed)
    emulator.reset(seedPipes=PIPES, services=3)
    scale_manifests(tmp_path / "m", PIPES, 3, dashboards=DASHBOARDS)
    emulator.configure(faultRate=0.2, faultSeed=seed, latencyMs=30)
    state = tmp_path / "state.json"
    env = {**os.environ, **SECRET_ENV, **emulator.env()}
    args = [sys.executable, "-m", "reconciler"]
    args += apply_args([tmp_path / "m"], state, "--parallelism", "4")
    kills = finished = 0
    started = time.monotonic()
    while kills < KILLS and time.monotonic() - started < TIME_BOUND:
        # A random moment measured in progress rather than seconds (start-up time varies with
        # the machine's load): after 0 to 12 more writes reached the server, or after a random
        # 0.3 to 3 s when no writes come (a run that only reads is killed mid-read).
        log = emulator.requests()
        target = len(writes(log)) + rng.randint(0, 12)
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The random delay counts from the run's first request, not from its start: on a
        # loaded machine start-up alone can outlast 3 s, and every kill then lands before a
        # single write (seen under a parallel test run).
        first_by = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < first_by:
            if len(emulator.requests()) > len(log):
                break
            time.sleep(0.02)
        until = time.monotonic() + rng.uniform(0.3, 3.0)
        while proc.poll() is None and time.monotonic() < until:
            if len(writes(emulator.requests())) >= target:
                break
            time.sleep(0.02)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        else:
            finished += 1
        proc.wait()
        if state.exists():
            json.loads(state.read_text(encoding="utf-8"))  # never half-written
    settle(emulator)
    log = emulator.requests()
    writes_before = len(writes(log))
    # Creations that took effect while runs were being killed (a dropped answer included).
    created = sum(
        1
        for r in log
        if r["method"] == "POST" and (r["status"] == 200 or r["fault"] == "drop-after-apply")
    )
    emulator.configure(faultRate=0.0, latencyMs=0)

    result = run_cli(apply_args([tmp_path / "m"], state), emulator.env())
    assert result.exit_code == 0, result.output
    code, out = plan_code(emulator, [tmp_path / "m"], state)
    assert code == 0, out

    listed = httpx.get(
        f"{emulator.url}/api/v2/dashboards",
        headers={"Authorization": f"Bearer {emulator.token}"},
        timeout=10,
    ).json()["data"]
    assert sorted(d["name"] for d in listed) == [f"Dashboard {d}" for d in range(DASHBOARDS)]
    recorded = load_state(state)
    ids = set()
    for d in range(DASHBOARDS):
        record = recorded.dashboard(f"dash-{d}")
        assert record is not None, f"dash-{d} is not in the state"
        ids.add(record.id)
    assert ids == {d["id"] for d in listed}
    print(
        f"\nchaos (seed {seed}): {kills} SIGKILLs, {finished} runs finished on their own, "
        f"{writes_before} writes under faults ({created} dashboard creations took effect); "
        f"clean apply converged with {len(listed)} dashboards"
    )
    assert kills >= 3, "too few kills landed inside a run to say anything"
    assert created >= 1, "no dashboard was created while runs were being killed"
