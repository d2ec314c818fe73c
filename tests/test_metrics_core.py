"""The run metrics as a core API: one record, the same families in a server's registry and a textfile."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.metrics import RunCollector, RunRecord, fill_registry, succeeded, write_textfile


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Parse Prometheus text into {(name, sorted labels): value}."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.parametrize(
    ("code", "ok"), [(0, True), (2, True), (1, False), (130, False), (143, False), (None, False)]
)
def test_a_finding_is_a_success_and_an_error_or_interruption_is_not(
    code: int | None, ok: bool
) -> None:
    assert succeeded(code) is ok


def finished(command: str, code: int, **resources: int) -> RunRecord:
    record = RunRecord(command)
    record.count(resources, drifted=resources.get("update"))
    record.requests, record.throttled = {"management": 7}, {"management": 2}
    record.finish(code)
    return record


def test_a_server_registry_shows_the_latest_run_of_each_command() -> None:
    registry = CollectorRegistry()
    collector = fill_registry(registry, finished("plan", 2, update=3, unchanged=1))
    collector.update(finished("check_backups", 2, fresh=2, stale=1))
    found = samples(generate_latest(registry).decode())
    assert found[("reconcile_run_success", (("command", "plan"),))] == 1
    assert found[("reconcile_run_success", (("command", "check_backups"),))] == 1
    key = ("reconcile_resources", (("command", "plan"), ("outcome", "update")))
    assert found[key] == 3
    assert found[("reconcile_drifted_resources", (("command", "plan"),))] == 3
    throttled = ("reconcile_throttled_requests", (("command", "plan"), ("interface", "management")))
    assert found[throttled] == 2
    first = found[("reconcile_last_success_timestamp_seconds", (("command", "plan"),))]
    collector.update(finished("plan", 1))  # a failure keeps the last success
    again = samples(generate_latest(registry).decode())
    assert again[("reconcile_run_success", (("command", "plan"),))] == 0
    assert again[("reconcile_last_success_timestamp_seconds", (("command", "plan"),))] == first


def test_the_textfile_carries_the_last_success_over_a_failed_run(tmp_path: Path) -> None:
    path = tmp_path / "textfile" / "reconcile.prom"
    write_textfile(path, finished("apply", 0, applied=2))
    before = samples(path.read_text(encoding="utf-8"))
    write_textfile(path, finished("apply", 1, failed=1))
    after = samples(path.read_text(encoding="utf-8"))
    last = ("reconcile_last_success_timestamp_seconds", (("command", "apply"),))
    assert after[last] == before[last]
    assert after[("reconcile_run_success", (("command", "apply"),))] == 0
    assert sorted(p.name for p in path.parent.iterdir()) == ["reconcile.prom"]


def test_a_collector_without_runs_yields_no_samples() -> None:
    assert list(RunCollector().collect()) == []
