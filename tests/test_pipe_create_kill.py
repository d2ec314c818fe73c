"""A pipe create survives the worst moments: an apply SIGKILLed after its POST reached the
server but before the answer (and the id) reached the state is healed by adoption by name on
the next run — never a second pipe; and two runners applying at once on one shared PostgreSQL
state create one pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import SECRET_ENV, UNPACED, run_cli, settle, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec, pipes_named
from tests.support.state_servers import Postgres


def _spawn(root: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", "apply", str(root), "--auto-approve", *UNPACED, *args],
        env={**os.environ, **SECRET_ENV, **env, "RECONCILE_CONFIG": os.devnull, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_run_killed_between_the_create_and_its_state_write_is_healed_by_adoption(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    # Each request waits 1.5 s before the server handles it: the POST is on the wire, the
    # client waits for its answer, and is killed then; the server creates the pipe after.
    emulator.configure(latencyMs=1500)
    victim = _spawn(root, emulator.env(), "--state", str(state))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(r["method"] == "POST" for r in emulator.requests()):
                break
            time.sleep(0.02)
        else:
            pytest.fail("the apply never sent its create")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        settle(emulator)  # the create lands after the kill
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.communicate()
    emulator.configure(latencyMs=0)
    (made,) = pipes_named(emulator, "returns")  # the server did create it
    killed = json.loads(state.read_text())["resources"]["Pipe/returns"]
    assert "id" not in killed and killed["uncertain"] is True  # the answer never arrived
    posts = len([w for w in writes(emulator.requests()) if w["method"] == "POST"])

    planned = run_cli(["plan", str(root), "--state", str(state), *UNPACED], emulator.env())
    assert planned.exit_code == 0, planned.output
    assert f"adopted by name: pipe {made['id']}" in planned.stdout
    healed = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), *UNPACED], emulator.env()
    )
    assert healed.exit_code == 0, healed.output
    assert len([w for w in writes(emulator.requests()) if w["method"] == "POST"]) == posts
    assert [p["id"] for p in pipes_named(emulator, "returns")] == [made["id"]]  # never a second
    recorded = json.loads(state.read_text())["resources"]["Pipe/returns"]
    assert recorded["id"] == made["id"] and recorded["createdByUs"] is True
    assert "uncertain" not in recorded
    again = run_cli(
        ["plan", str(root), "--state", str(state), "--detailed-exitcode", *UNPACED], emulator.env()
    )
    assert again.exit_code == 0, again.output


def test_two_runners_at_once_on_one_shared_state_create_one_pipe(
    emulator: Emulator, postgres_server: Postgres, tmp_path: Path
) -> None:
    emulator.configure(latencyMs=150)
    env = {
        **emulator.env(),
        "RECONCILE_STATE": postgres_server.url,
        "RECONCILE_WORKSPACE": f"w{uuid.uuid4().hex[:8]}",
    }
    roots = []
    for n in range(2):
        root = tmp_path / f"runner-{n}"
        write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
        roots.append(root)
    runners = [_spawn(root, env, "--lock-timeout", "60") for root in roots]
    results = [(p.wait(timeout=120), *p.communicate()) for p in runners]
    assert [code for code, _, _ in results] == [0, 0], results
    outputs = sorted(out for _, out, _ in results)
    assert sum("Apply complete: 1 applied" in out for out in outputs) == 1, outputs
    assert sum("Nothing to apply." in out for out in outputs) == 1, outputs
    assert len(pipes_named(emulator, "returns")) == 1
    posts = [w for w in writes(emulator.requests()) if w["method"] == "POST"]
    assert len(posts) == 1
