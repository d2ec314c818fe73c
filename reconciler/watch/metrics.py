"""The watch's Prometheus families, in a registry of their own that ``/metrics`` serves.

Counters of cycles by result (``interrupted``: an apply stopped by SIGTERM/SIGINT, not a
failure), drift found and corrected by resource kind, requests by
interface; a histogram of cycle durations; gauges for the last successful cycle and for
leadership (``reconcile_watch_leader``: 1 on the leader, 0 on a standby). Labels hold only
fixed words (results, kinds, interface names): never a resource name, a URL or a secret.
The registry also holds the run families of ``--metrics-file`` (``reconciler.metrics``) for the
latest cycle, labelled ``command="watch"``.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

from reconciler.metrics import RunCollector, RunRecord
from reconciler.watch.status import Cycle, CycleResult

__all__: list[str] = []


# The exit code a ``reconcile plan``/``apply`` run would have had: drift found is a finding.
_EXIT_CODES = {
    CycleResult.IN_SYNC: 0,
    CycleResult.CORRECTED: 0,
    CycleResult.DRIFT: 2,
    CycleResult.FAILED: 1,
    CycleResult.INVALID: 1,
}

PREFIX = "reconcile_watch_"
# Cycle durations: a quiet plan takes a fraction of a second, a large correction minutes.
BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class WatchMetrics:
    """The families one watch process exports."""

    def __init__(self) -> None:
        # The ``_created`` samples only double the page: a watch process exports nothing else.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        r = self.registry

        def counter(name: str, doc: str, label: str) -> Counter:
            return Counter(PREFIX + name, doc, [label], registry=r)

        self.cycles = counter("cycles", "Cycles by result.", "result")
        self.found = counter("drift_found", "Changes found by plans, by resource kind.", "kind")
        self.corrected = counter("drift_corrected", "Changes applied, by resource kind.", "kind")
        self.requests = counter(
            "requests", "HTTP requests sent by cycles, by interface.", "interface"
        )
        self.duration = Histogram(
            PREFIX + "cycle_duration_seconds", "Duration of cycles.", buckets=BUCKETS, registry=r
        )
        self.last_success = Gauge(
            PREFIX + "last_success_timestamp_seconds",
            "When a cycle last succeeded (Unix time).",
            registry=r,
        )
        self.leader = Gauge(
            PREFIX + "leader", "1 when this replica holds the lease, else 0.", registry=r
        )
        for result in CycleResult:
            self.cycles.labels(result=str(result))
        # The run families of ``--metrics-file`` (``reconciler.metrics``), labelled
        # command="watch", showing the latest cycle as one run.
        self.runs = RunCollector()
        r.register(self.runs)

    def observe(self, cycle: Cycle, requests: dict[str, int], ended: float, run: RunRecord) -> None:
        """Count one completed cycle (``run``: its plan or apply counted, its clients' stats added)."""
        # An interrupted cycle ends as ``apply`` does when interrupted: 128 + the signal.
        interrupted = cycle.result is CycleResult.INTERRUPTED
        run.finish(128 + cycle.stopped_by if interrupted else _EXIT_CODES[cycle.result])
        self.runs.update(run)
        self.cycles.labels(result=str(cycle.result)).inc()
        self.duration.observe(cycle.duration)
        for kind, count in cycle.found_by_kind.items():
            self.found.labels(kind=kind).inc(count)
        for kind, count in cycle.corrected_by_kind.items():
            self.corrected.labels(kind=kind).inc(count)
        for interface, count in requests.items():
            self.requests.labels(interface=interface).inc(count)
        if cycle.succeeded:
            self.last_success.set(ended)

    def render(self) -> bytes:
        """Return the Prometheus text exposition of every family."""
        return generate_latest(self.registry)
