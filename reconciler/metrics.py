"""Run metrics: what one run of a command reports to Prometheus, for a file or a server.

A ``RunRecord`` is filled while a command runs (resources by outcome, drifted resources, the
requests and 429 answers of every client the run opened) and finished with the exit code. A
finding — drift (plan ``--detailed-exitcode``) or stale backups, exit 2 — is a successful run:
the check ran and answered, which is what an alert on ``reconcile_last_success_timestamp_seconds``
watches. ``RunCollector`` turns the latest record of each command into gauge families labelled
by ``command``; ``fill_registry`` adds one to a ``prometheus_client`` registry (a long-running
server), and ``write_textfile`` writes a record atomically in the node exporter's textfile
format, carrying the last success over from the previous file when this run failed. Labels hold
only fixed words and interface names: never a resource name, a URL or a secret.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from prometheus_client.core import CollectorRegistry, Metric

    from reconciler.client.wire import ClientStats
    from reconciler.plan.actions import Plan

__all__ = [
    "FINDING_EXIT_CODE",
    "RunCollector",
    "RunRecord",
    "note",
    "note_apply",
    "note_plan",
    "recording",
    "write_textfile",
]


PREFIX = "reconcile_"
LAST_SUCCESS = f"{PREFIX}last_success_timestamp_seconds"
# Exit 2 is a finding (drift, stale backups): the run itself succeeded.
FINDING_EXIT_CODE = 2


def succeeded(exit_code: int | None) -> bool:
    """Tell whether a run that ended with ``exit_code`` succeeded (a finding counts as one)."""
    return exit_code in (0, FINDING_EXIT_CODE)


class Counts(Protocol):
    """A result that counts its resources by outcome (``ApplyResult``)."""

    def counts(self) -> Mapping[str, int]:
        """Return resources by outcome."""


@dataclass
class RunRecord:
    """What one run reports: filled in while the command runs, finished when it ends."""

    command: str
    started: float = field(default_factory=time.monotonic)
    resources: dict[str, int] = field(default_factory=dict)
    drifted: int | None = None
    requests: dict[str, int] = field(default_factory=dict)  # by interface, retries included
    throttled: dict[str, int] = field(default_factory=dict)  # 429 answers by interface
    exit_code: int | None = None
    duration: float | None = None
    ended_at: float | None = None  # Unix time

    @property
    def ok(self) -> bool:
        """Tell whether the run succeeded (a finding counts as success)."""
        return succeeded(self.exit_code)

    def count(self, resources: Mapping[str, int], drifted: int | None = None) -> None:
        """Record the run's resources by outcome (and how many drifted)."""
        self.resources = {str(k): int(v) for k, v in resources.items()}
        self.drifted = drifted

    def count_plan(self, plan: Plan) -> None:
        """Record a plan: resources by operation (``noop`` as ``unchanged``, a rename-only
        action as ``rename``, as in the plan's summary) and the drifted ones."""
        from reconciler.plan.actions import Op

        counts: dict[str, int] = {}
        for action in plan.actions:
            if action.renames_only:
                outcome = "rename"
            else:
                outcome = "unchanged" if action.operation == Op.NOOP else str(action.operation)
            counts[outcome] = counts.get(outcome, 0) + 1
        self.count(counts, drifted=len(plan.changed))

    def count_apply(self, result: Counts, plan: Plan) -> None:
        """Record an apply: resources by outcome (plan errors as ``error``), drifted before it."""
        counts = dict(result.counts())
        if plan.failed:
            counts["error"] = counts.get("error", 0) + len(plan.failed)
        self.count(counts, drifted=len(plan.changed))

    def add_client_stats(self, stats: Iterable[ClientStats]) -> None:
        """Add the requests and 429s of the clients the run opened (``ClientStats``)."""
        for item in stats:
            for interface, n in item.requests.items():
                self.requests[interface] = self.requests.get(interface, 0) + n
            for interface, n in item.throttled_by.items():
                self.throttled[interface] = self.throttled.get(interface, 0) + n

    def finish(self, exit_code: int | None) -> None:
        """Close the record with the run's exit code (None: it ended without one)."""
        self.exit_code = exit_code
        self.duration = time.monotonic() - self.started
        self.ended_at = time.time()


_CURRENT: ContextVar[RunRecord | None] = ContextVar("run_record", default=None)


def current() -> RunRecord | None:
    """Return the record of the run in progress, or None when nothing records it."""
    return _CURRENT.get()


def note(resources: Mapping[str, int], drifted: int | None = None) -> None:
    """Record resources by outcome on the current run (no-op when nothing records it)."""
    record = _CURRENT.get()
    if record is not None:
        record.count(resources, drifted)


def note_plan(plan: Plan) -> None:
    """Record a plan on the current run (no-op when nothing records it)."""
    record = _CURRENT.get()
    if record is not None:
        record.count_plan(plan)


def note_apply(result: Counts, plan: Plan) -> None:
    """Record an apply on the current run (no-op when nothing records it)."""
    record = _CURRENT.get()
    if record is not None:
        record.count_apply(result, plan)


@contextlib.contextmanager
def recording(command: str) -> Iterator[RunRecord]:
    """Record the run inside the block: ``note*`` fill it, every client's requests count.

    The caller calls ``finish`` with the exit code; a block left by an exception finishes the
    record as failed.
    """
    from reconciler.client.api import observe_clients

    record = RunRecord(command)
    token = _CURRENT.set(record)
    try:
        with observe_clients() as stats:
            try:
                yield record
            finally:
                record.add_client_stats(stats)
                if record.ended_at is None:
                    record.finish(None)
    finally:
        _CURRENT.reset(token)


class RunCollector:
    """A ``prometheus_client`` collector of the latest run of each command."""

    def __init__(self) -> None:
        self._records: dict[str, RunRecord] = {}
        self._last_success: dict[str, float] = {}

    def update(self, record: RunRecord, last_success: float | None = None) -> None:
        """Show ``record`` as its command's latest run (``last_success``: an earlier success)."""
        self._records[record.command] = record
        if record.ok and record.ended_at is not None:
            self._last_success[record.command] = record.ended_at
        elif last_success is not None and record.command not in self._last_success:
            self._last_success[record.command] = last_success

    def collect(self) -> Iterator[Metric]:
        """Yield the gauge families (the collector protocol of ``prometheus_client``)."""
        from prometheus_client.core import GaugeMetricFamily

        def family(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(PREFIX + name, doc, labels=["command", *labels])

        success = family("run_success", "1 when the last run succeeded, else 0.")
        duration = family("run_duration_seconds", "Duration of the last run.")
        ended = family("run_timestamp_seconds", "When the last run ended (Unix time).")
        last = family("last_success_timestamp_seconds", "When a run last succeeded (Unix time).")
        resources = family("resources", "Resources of the last run by outcome.", "outcome")
        drifted = family(
            "drifted_resources", "Resources whose live state differed from the manifests."
        )
        requests = family("requests", "HTTP requests sent, retries included.", "interface")
        throttled = family(
            "throttled_requests", "Requests the server answered with 429.", "interface"
        )
        for command, record in sorted(self._records.items()):
            success.add_metric([command], 1 if record.ok else 0)
            duration.add_metric([command], record.duration or 0.0)
            ended.add_metric([command], record.ended_at or time.time())
            if command in self._last_success:
                last.add_metric([command], self._last_success[command])
            for outcome, n in sorted(record.resources.items()):
                resources.add_metric([command, outcome], n)
            if record.drifted is not None:
                drifted.add_metric([command], record.drifted)
            for interface in sorted(record.requests):
                requests.add_metric([command, interface], record.requests[interface])
                throttled.add_metric([command, interface], record.throttled.get(interface, 0))
        families = (success, duration, ended, last, resources, drifted, requests, throttled)
        yield from (f for f in families if f.samples)


def fill_registry(registry: CollectorRegistry, record: RunRecord) -> RunCollector:
    """Register a collector showing ``record`` in ``registry`` (a server's); return it."""
    collector = RunCollector()
    collector.update(record)
    registry.register(collector)
    return collector


def write_textfile(path: Path, record: RunRecord) -> None:
    """Write ``record`` to ``path`` atomically (``prometheus_client.write_to_textfile``).

    A failed run keeps the last success timestamp the previous file recorded for its command.
    """
    from prometheus_client import CollectorRegistry, write_to_textfile

    collector = RunCollector()
    collector.update(record, None if record.ok else previous_success(path, record.command))
    registry = CollectorRegistry()
    registry.register(collector)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)


def previous_success(path: Path, command: str) -> float | None:
    """Return the last success timestamp the file at ``path`` recorded for ``command``."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = path.read_text(encoding="utf-8")
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == LAST_SUCCESS and sample.labels.get("command") == command:
                    return float(sample.value)
    except (OSError, ValueError):
        return None
    return None
