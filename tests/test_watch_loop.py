"""The watch loop in-process (no server): a failing cycle backs off 1 s, 2 s, 4 s… capped at the
interval; an invalid manifest is an ``invalid`` cycle with its errors
located; readiness follows the last cycle; a standby that read the lease is ready."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.metrics import RunRecord
from reconciler.model.errors import ConfigError, Location, ManifestError, ManifestErrors
from reconciler.state.backend import Holder
from reconciler.watch import CycleResult, Watcher, WatchOptions, WatchStatus
from reconciler.watch.lease import LocalLease
from reconciler.watch.loop import Target
from reconciler.watch.metrics import WatchMetrics
from reconciler.watch.status import Cycle


def _watcher(tmp_path: Path, load: object, interval: float = 10.0) -> Watcher:
    lease = LocalLease(tmp_path / "state.json", Holder.current("test"))
    status = WatchStatus(mode="detect", interval=interval, state="state.json", workspace="default")
    status.running, status.leader, status.lease_checked = True, True, True
    return Watcher(load, lease, WatchOptions(interval=interval, jitter=0), status)  # type: ignore[arg-type]


def test_failing_cycles_back_off_doubling_from_one_second_up_to_the_interval(
    tmp_path: Path,
) -> None:
    outcomes: list[Exception | None] = [ConfigError("no key")] * 5

    def load(reload: bool) -> Target:
        raise outcomes.pop(0) or AssertionError

    watcher = _watcher(tmp_path, load, interval=6.0)
    waits = []
    for _ in range(5):
        asyncio.run(watcher._one_cycle())
        waits.append(watcher._next_wait())
    assert waits == [1.0, 2.0, 4.0, 6.0, 6.0]
    assert [c.result for c in watcher.status.cycles] == [CycleResult.FAILED] * 5
    assert watcher.status.not_ready() == "the last cycle (#5) failed: no key"


def test_an_invalid_manifest_is_an_invalid_cycle_with_each_error_located(tmp_path: Path) -> None:
    errors = ManifestErrors(
        [ManifestError(Location("m/pipes/a.yaml", 7, 5), "spec.name", "must be a string")]
    )

    def load(reload: bool) -> Target:
        raise errors

    watcher = _watcher(tmp_path, load)
    asyncio.run(watcher._one_cycle())
    cycle = watcher.status.cycles[-1]
    assert cycle.result is CycleResult.INVALID
    assert cycle.errors == [
        {
            "file": "m/pipes/a.yaml",
            "line": 7,
            "col": 5,
            "path": "spec.name",
            "message": "must be a string",
        }
    ]
    assert "nothing was sent" in cycle.message


@pytest.mark.parametrize(
    ("leader", "checked", "reason"),
    [
        (False, False, "the lease has not been checked yet"),
        (False, True, None),
        (True, True, "no cycle has completed yet"),
    ],
)
def test_readiness_before_any_cycle(leader: bool, checked: bool, reason: str | None) -> None:
    status = WatchStatus(mode="detect", interval=1, state="s", workspace="default", running=True)
    status.leader, status.lease_checked = leader, checked
    assert status.not_ready() == reason


def test_a_local_lease_writes_its_holder_record_whole_where_state_reads_records(
    tmp_path: Path,
) -> None:
    from reconciler.state.local import read_record

    lease = LocalLease(tmp_path / "state.json", Holder.current("test"))
    try:
        assert lease.try_acquire()
        record, holder = read_record(lease.record_path), lease.holder()
        assert record is not None and holder is not None
        assert record == holder and record["pid"] == Holder.current("test").pid
        assert not list(tmp_path.glob("*.tmp"))  # the temp file it was written to was renamed
    finally:
        lease.release()
    assert lease.holder() is None


def test_an_interrupted_cycle_is_counted_interrupted_not_failed_nor_a_success() -> None:
    cycle = Cycle(
        3,
        time.time(),
        CycleResult.INTERRUPTED,
        2.5,
        found=2,
        corrected=1,
        requests=13,
        message="stopped by SIGTERM while applying; left for the next cycle: Pipe/orders",
        stopped_by=signal.SIGTERM,
    )
    assert not cycle.failed and not cycle.succeeded
    metrics = WatchMetrics()
    metrics.observe(cycle, {"management": 13}, time.time(), RunRecord("watch"))
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for s in family.samples
    }
    cycles = "reconcile_watch_cycles_total"
    assert found[(cycles, (("result", "interrupted"),))] == 1
    assert found[(cycles, (("result", "failed"),))] == 0
    assert found[("reconcile_watch_last_success_timestamp_seconds", ())] == 0
    assert found[("reconcile_run_success", (("command", "watch"),))] == 0
    status = WatchStatus(mode="correct", interval=60, state="s", workspace="default", running=True)
    status.leader = status.lease_checked = True
    status.cycles.append(cycle)
    assert status.not_ready() is None  # an interrupted cycle is no failure
    schema = json.loads(
        (Path(__file__).parent.parent / "schemas" / "watch-status.schema.json").read_text()
    )
    document = status.document()
    jsonschema.validate(document, schema)
    assert document["cycles"][0]["result"] == "interrupted"
