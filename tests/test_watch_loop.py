"""The watch loop in-process (no endpoint): a failing cycle backs off 1 s, 2 s, 4 s… capped at
the interval; an invalid manifest is an ``invalid`` cycle with its errors located; readiness
follows the last cycle; a standby that read the lease is ready; cycles against the emulator
leave no more garbage behind after many of them than after one."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import time
from pathlib import Path

import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.metrics import RunRecord
from reconciler.model.errors import ConfigError, Location, ManifestError, ManifestErrors
from reconciler.plan.scope import Scope
from reconciler.state.backend import Holder
from reconciler.state.local import LocalLease
from reconciler.watch import CycleResult, Watcher, WatchOptions, WatchStatus
from reconciler.watch.loop import Target
from reconciler.watch.metrics import WatchMetrics
from reconciler.watch.status import Cycle
from tests.support.asgi import config
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES, set_example_secrets


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


def test_cycles_should_leave_no_more_garbage_after_many_cycles_than_after_one(
    tmp_path: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A watch runs for weeks: the garbage of every cycle must be collectable, or a month of
    # cycles grows the process without end.
    set_example_secrets(monkeypatch)
    api = config(
        base_url=emulator.url,
        dashboards_url=emulator.url,
        key_id=emulator.key_id,
        key_secret=emulator.key_secret,
        dashboards_token=emulator.token,
    )
    scope = Scope((str(EXAMPLES),), str(tmp_path / "state.json"), organization=emulator.org_id)
    target = Target(api, scope)

    def garbage_after(cycles: int) -> int:
        gc.collect()
        watcher = _watcher(tmp_path, lambda reload: target, interval=0.001)

        def count(cycle: Cycle) -> None:
            assert cycle.result is CycleResult.DRIFT, cycle.message
            if cycle.number >= cycles:
                watcher.stop()

        watcher.on_cycle = count
        asyncio.run(watcher.run())
        return gc.collect()  # what the process still holds that nothing can reach

    one, many = garbage_after(1), garbage_after(20)
    assert many <= 2 * one, (one, many)
