"""The watch loop in-process (no server): a failing cycle backs off 1 s, 2 s, 4 s… capped at the
interval; an invalid manifest is an ``invalid`` cycle with its errors
located; readiness follows the last cycle; a standby that read the lease is ready."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reconciler.model.errors import ConfigError, Location, ManifestError, ManifestErrors
from reconciler.state.backend import Holder
from reconciler.watch import CycleResult, Watcher, WatchOptions, WatchStatus
from reconciler.watch.lease import LocalLease
from reconciler.watch.loop import Target


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
