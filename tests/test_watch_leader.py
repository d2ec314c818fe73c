"""One leader among ``watch`` replicas sharing a state: on PostgreSQL exactly one replica plans
and writes while the other stands by without a request; after a SIGKILL of the leader the
standby corrects a new drift within lease + interval; SIGTERM releases the lease (no advisory
lock is left). On S3 the lease object shows its holder and expiry and a standby waits on it."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import boto3
import psycopg
import pytest

from tests.support.cli import run_cli, writes
from tests.support.emulator import Emulator
from tests.support.state_servers import Postgres, S3Server
from tests.support.watch import WatchProcess, drift_orders, orders_wait_ms, project, until

INTERVAL, LEASE = 1.0, 2.0
ARGS = ("--rate", "none", "--jitter", "0", "--interval", "1s", "--lease", "2s", "--mode", "correct")


def _leader(a: WatchProcess, b: WatchProcess) -> tuple[WatchProcess, WatchProcess] | None:
    leaders = [w for w in (a, b) if w.status()["leader"]]
    if len(leaders) != 1:
        return None
    return (a, b) if leaders[0] is a else (b, a)


def test_two_watches_on_one_postgresql_state_one_writes_and_the_other_takes_over_after_sigkill(
    emulator: Emulator, postgres_server: Postgres, tmp_path: Path
) -> None:
    workspace = f"w{uuid.uuid4().hex[:8]}"
    state = ["--state", postgres_server.url, "--workspace", workspace]
    first, second = project(tmp_path, "a"), project(tmp_path, "b")
    applied = run_cli(
        ["apply", str(first / "manifests"), *state, "--auto-approve", "--rate", "none"],
        emulator.env(),
    )
    assert applied.exit_code == 0, applied.output
    a = WatchProcess(["manifests", *state, *ARGS], first, emulator.env()).start()
    b = WatchProcess(["manifests", *state, *ARGS], second, emulator.env()).start()
    try:
        leader, standby = until(lambda: _leader(a, b), what="exactly one leader")
        leader.wait_for_line(r"cycle 1: in-sync")
        drift_orders(emulator)
        since = len(emulator.requests())
        leader.wait_for_line(r"cycle \d+: corrected; changes found 1, corrected 1")
        assert len(writes(emulator.requests()[since:])) == 1
        assert standby.status()["cycles"] == [] and not standby.status()["leader"]
        assert not any("cycle" in line for line in standby.lines)
        metrics = standby.get("/metrics").text
        assert "reconcile_watch_leader 0.0" in metrics
        assert standby.get("/readyz").status_code == 200  # a standby is ready: it waits its turn
        holder = until(lambda: standby.status()["holder"], what="the standby seeing the holder")
        assert holder["pid"] == leader.process.pid

        leader.kill()
        killed = time.monotonic()
        drift_orders(emulator, wait_ms=4000)
        until(lambda: orders_wait_ms(emulator) == 7500, timeout=30, what="the standby's correction")
        took = time.monotonic() - killed
        print(
            f"\nfailover: leader pid {leader.process.pid} SIGKILLed at t; drift corrected by "
            f"pid {standby.process.pid} at t + {took:.1f} s (lease {LEASE:g} s, interval {INTERVAL:g} s)"
        )
        standby.wait_for_line(r"leader: this replica holds the lease")
        # The promise, with room for a loaded two-core machine's scheduling.
        assert took < LEASE + INTERVAL + 10
        assert standby.terminate() == 0
        standby.wait_for_line(r"stopped; lease released")
    finally:
        for watch in (a, b):
            if watch.process.poll() is None:
                watch.kill()
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
    assert row is not None and row[0] == 0


@pytest.mark.parametrize("kind", ["s3"])
def test_on_s3_the_lease_object_shows_holder_and_expiry_and_a_second_watch_stands_by(
    emulator: Emulator, s3_server: S3Server, tmp_path: Path, kind: str
) -> None:
    key = f"{uuid.uuid4().hex[:8]}/state.json"
    env = {**emulator.env(), **s3_server.env()}
    state = ["--state", f"s3://{s3_server.bucket}/{key}"]
    first, second = project(tmp_path, "a"), project(tmp_path, "b")
    applied = run_cli(
        ["apply", str(first / "manifests"), *state, "--auto-approve", "--rate", "none"], env
    )
    assert applied.exit_code == 0, applied.output
    a = WatchProcess(["manifests", *state, *ARGS], first, env).start()
    b = WatchProcess(["manifests", *state, *ARGS], second, env).start()
    try:
        leader, standby = until(lambda: _leader(a, b), what="exactly one leader")
        s3 = boto3.client(
            "s3",
            endpoint_url=s3_server.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        record = json.loads(
            s3.get_object(Bucket=s3_server.bucket, Key=key + ".watch-lease")["Body"].read()
        )
        assert record["pid"] == leader.process.pid and record["expiresAt"].endswith("Z")
        assert record["expires"] > time.time()
        holder = until(lambda: standby.status()["holder"], what="the standby seeing the holder")
        assert holder["pid"] == leader.process.pid
        assert leader.terminate() == 0
        until(lambda: standby.status()["leader"], timeout=15, what="the standby taking over")
    finally:
        for watch in (a, b):
            if watch.process.poll() is None:
                watch.terminate()
