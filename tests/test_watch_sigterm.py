"""``reconcile watch`` stopped by SIGTERM, as real processes against the emulator: it exits 0
and frees the lease (a second local watch meanwhile refuses, naming the holder); a request in
flight finishes and its result is saved; a correction cut short is an interrupted cycle that
leaves the rest for the next one, never a failed cycle."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.support.cli import run_cli, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import KINESIS_PIPE, STAGING
from tests.support.watch import (
    WATCH_FAST,
    WatchProcess,
    correcting_watch,
    drift_orders,
    orders_wait_ms,
    pipe_path,
    sigterm_once_a_patch_is_in_flight,
    watching_applied_project,
)


def test_sigterm_exits_0_and_frees_the_lease_a_second_local_watch_refuses_naming_the_holder(
    emulator: Emulator, tmp_path: Path
) -> None:
    first, directory, state = watching_applied_project(emulator, tmp_path)
    try:
        first.wait_for_line(r"cycle 1: ")
        second = WatchProcess(
            ["manifests", "--state", state, *WATCH_FAST], directory, emulator.env()
        )
        assert second.process.wait(timeout=30) == 1
        refusal = second.wait_for_line(r"Error: another watch already runs").string
        assert f"pid {first.process.pid} on " in refusal
    finally:
        assert first.terminate() == 0
    first.wait_for_line(r"stopped; lease released")
    third = WatchProcess(
        ["manifests", "--state", state, *WATCH_FAST], directory, emulator.env()
    ).start()
    try:
        third.wait_for_line(r"cycle 1: in-sync")
    finally:
        assert third.terminate() == 0


def test_sigterm_during_a_correction_lets_the_request_finish_and_exits_0(
    emulator: Emulator, tmp_path: Path
) -> None:
    watch, directory, state = watching_applied_project(emulator, tmp_path, "--mode", "correct")
    try:
        watch.wait_for_line(r"cycle 1: in-sync")
        emulator.configure(latencyMs=1500)
        drift_orders(emulator)
        since = len(emulator.requests())
        sigterm_once_a_patch_is_in_flight(watch, emulator, since, timeout=30)
    finally:
        if watch.process.poll() is None:
            watch.kill()
    emulator.configure(latencyMs=0)
    assert orders_wait_ms(emulator) == 7500
    patches = [r for r in writes(emulator.requests()[since:]) if r["method"] == "PATCH"]
    assert [r["status"] for r in patches] == [200]
    # The state was saved and the lease released: a plan finds nothing left to do.
    result = run_cli(
        [
            "plan",
            str(directory / "manifests"),
            "--state",
            state,
            "--rate",
            "none",
            "--detailed-exitcode",
        ],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    assert not (directory / "state.json.watch.json").exists()


def test_a_correction_stopped_by_sigterm_is_an_interrupted_cycle_not_a_failed_one(
    emulator: Emulator, tmp_path: Path
) -> None:
    watch = correcting_watch(emulator, tmp_path, "--parallelism", "1")
    try:
        watch.wait_for_line(r"cycle 1: in-sync")
        emulator.configure(latencyMs=1500)
        drift_orders(emulator)  # two drifted pipes, corrected one at a time
        response = httpx.patch(
            emulator.url + pipe_path(emulator, KINESIS_PIPE, STAGING),
            json={"settings": {"streaming_max_insert_wait_ms": 4000}},
            auth=(emulator.key_id, emulator.key_secret),
            timeout=10,
        )
        response.raise_for_status()
        since = len(emulator.requests())
        sigterm_once_a_patch_is_in_flight(watch, emulator, since, timeout=40)
    finally:
        if watch.process.poll() is None:
            watch.kill()
    line = watch.wait_for_line(r"cycle \d+: (interrupted|failed)").string
    assert re.search(
        r"cycle \d+: interrupted; changes found 2, corrected 1; \d+ requests; [\d.]+s — "
        r"stopped by SIGTERM while applying; left for the next cycle: Pipe/(orders|clickstream)$",
        line,
    ), line
    assert "failed" not in line
