"""Shared state end to end against the emulator: runners in different working directories
sharing one PostgreSQL or S3 state converge (no changes, no secret re-sent, one dashboard, with
and without --spec-only, nothing written to the working directory); three applies at once apply
exactly once; a SIGKILLed apply holding the PostgreSQL lock never blocks the next run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.support.cli import SECRET_ENV, UNPACED, run_cli, settle, writes
from tests.support.emulator import Emulator
from tests.support.manifests import (
    EXAMPLES,
    EXAMPLES_APPLIED,
    SPEC_ONLY_EXAMPLES_APPLIED,
    spec_only_examples,
)
from tests.support.state_servers import Postgres, S3Server

REPO = Path(__file__).resolve().parent.parent
# The emulator is on loopback: no request budget (the default one only paces these tests).


def _address(request: pytest.FixtureRequest, kind: str) -> tuple[str, dict[str, str]]:
    if kind == "postgresql":
        server: Postgres = request.getfixturevalue("postgres_server")
        return server.url, {}
    s3: S3Server = request.getfixturevalue("s3_server")
    return f"s3://{s3.bucket}/{uuid.uuid4().hex[:8]}/state.json", s3.env()


def _runner(tmp_path: Path, name: str, *, spec_only: bool = False) -> Path:
    """Copy the example manifests; a spec-only server cannot create, so no unpinned pipe then."""
    directory = tmp_path / name
    shutil.copytree(EXAMPLES, directory / "manifests")
    if spec_only:
        spec_only_examples(directory / "manifests")
    return directory


def _dashboards(emulator: Emulator) -> int:
    return len(emulator.data()["dashboards"])


@pytest.mark.parametrize("spec_only", [False, True], ids=["extensions", "spec-only"])
@pytest.mark.parametrize("kind", ["postgresql", "s3"])
def test_a_second_runner_with_the_shared_state_sees_no_changes_and_resends_no_secret(
    emulator: Emulator,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    spec_only: bool,
) -> None:
    emulator.configure(specOnly=spec_only)
    address, store_env = _address(request, kind)
    env = {
        **emulator.env(),
        **store_env,
        "RECONCILE_STATE": address,
        "RECONCILE_WORKSPACE": f"w{uuid.uuid4().hex[:8]}",
    }
    first = _runner(tmp_path, "runner-a", spec_only=spec_only)
    second = _runner(tmp_path, "runner-b", spec_only=spec_only)
    monkeypatch.chdir(first)
    applied = run_cli(
        ["apply", "manifests", "--auto-approve", *UNPACED, *(["--new-state"] if spec_only else [])],
        env,
    )
    assert applied.exit_code == 0, applied.output
    # The unpinned example pipe is created where the server can: one pipe, whichever runner.
    done = SPEC_ONLY_EXAMPLES_APPLIED if spec_only else EXAMPLES_APPLIED
    assert f"Apply complete: {done}" in applied.stdout
    after_first = len(writes(emulator.requests()))
    monkeypatch.chdir(second)
    planned = run_cli(["plan", "manifests", "--detailed-exitcode", *UNPACED], env)
    assert planned.exit_code == 0, planned.output
    assert "No changes" in planned.stdout
    assert "sensitive value changed" not in planned.stdout
    again = run_cli(["apply", "manifests", "--auto-approve", *UNPACED], env)
    assert again.exit_code == 0 and "Nothing to apply." in again.stdout
    assert len(writes(emulator.requests())) == after_first  # no secret (nor anything) re-sent
    assert _dashboards(emulator) == 1
    for runner in (first, second):
        assert sorted(p.name for p in runner.iterdir()) == ["manifests"]  # no state, no lock


def _spawn(cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reconciler",
            "apply",
            "manifests",
            "--auto-approve",
            *UNPACED,
            *args,
        ],
        cwd=cwd,
        env={**os.environ, **SECRET_ENV, **env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("kind", "lock_timeout"), [("postgresql", "0"), ("s3", "60")], ids=["pg-fail", "s3-wait"]
)
def test_three_applies_at_once_on_one_shared_state_apply_exactly_once(
    emulator: Emulator,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    kind: str,
    lock_timeout: str,
) -> None:
    emulator.configure(specOnly=True, latencyMs=150)
    address, store_env = _address(request, kind)
    env = {
        **emulator.env(),
        **store_env,
        "RECONCILE_STATE": address,
        "RECONCILE_WORKSPACE": f"w{uuid.uuid4().hex[:8]}",
    }
    runners = [_runner(tmp_path, f"runner-{n}", spec_only=True) for n in range(3)]
    processes = [_spawn(cwd, env, "--new-state", "--lock-timeout", lock_timeout) for cwd in runners]
    results = [(p.wait(timeout=120), *p.communicate()) for p in processes]
    applied = [r for r in results if "Apply complete: 9 applied" in r[1]]
    assert len(applied) == 1, results
    assert applied[0][0] == 0
    for code, out, err in results:
        if (code, out, err) == applied[0]:
            continue
        waited = code == 0 and "Nothing to apply." in out
        refused = code == 1 and "is locked by pid " in err and "lock ID " in err
        assert waited or refused, (code, out, err)
        if lock_timeout != "0":
            assert waited, (code, out, err)
    assert _dashboards(emulator) == 1
    for runner in runners:
        assert sorted(p.name for p in runner.iterdir()) == ["manifests"]


def test_a_killed_apply_holding_the_postgresql_lock_never_blocks_the_next_run(
    emulator: Emulator, postgres_server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator.configure(latencyMs=400)
    workspace = f"w{uuid.uuid4().hex[:8]}"
    env = {
        **emulator.env(),
        "RECONCILE_STATE": postgres_server.url,
        "RECONCILE_WORKSPACE": workspace,
    }
    runner = _runner(tmp_path, "runner")
    victim = _spawn(runner, env)
    try:
        deadline = time.monotonic() + 60
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = (
                    conn.execute(
                        "SELECT holder->>'pid' FROM reconcile_state_locks WHERE workspace = %s",
                        (workspace,),
                    ).fetchone()
                    if _has_lock_table(conn)
                    else None
                )
                if row and int(row[0]) == victim.pid and writes(emulator.requests()):
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the apply never held the lock while writing")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        settle(emulator)  # the victim's requests in flight land before the next run lists
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.communicate()
    emulator.configure(latencyMs=0)
    monkeypatch.chdir(runner)
    rerun = run_cli(["apply", "manifests", "--auto-approve", "--lock-timeout", "0", *UNPACED], env)
    assert rerun.exit_code == 0, rerun.output
    planned = run_cli(["plan", "manifests", "--detailed-exitcode", *UNPACED], env)
    assert planned.exit_code == 0, planned.output
    assert _dashboards(emulator) == 1


def _has_lock_table(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute("SELECT to_regclass('reconcile_state_locks')").fetchone()
    return bool(row and row[0])
