"""``--metrics-file PATH``: a run's outcome in Prometheus text format, for cron and monitoring.

``plan``, ``apply`` and ``check backups`` accept the flag. When the command ends (success,
finding or error) the file is replaced atomically — written beside itself, then renamed,
as the node exporter's textfile collector expects — with gauges labelled by ``command``:
success, duration, the run's timestamp, the last success timestamp (carried over from the
previous file when this run failed), resources by outcome, drifted resources, and requests
and 429 answers by interface. Labels hold only fixed words and interface names: never a
resource name, a URL or a secret. ``prometheus_client`` builds and writes the file.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any

import click

PREFIX = "reconcile_"
LAST_SUCCESS = f"{PREFIX}last_success_timestamp_seconds"


@dataclass
class RunRecord:
    """What one run reports: filled in by the command, written when it ends."""

    command: str
    started: float = field(default_factory=time.monotonic)
    resources: dict[str, int] = field(default_factory=dict)
    drifted: int | None = None


_CURRENT: ContextVar[RunRecord | None] = ContextVar("run_record", default=None)


def note(resources: Mapping[str, int], drifted: int | None = None) -> None:
    """Record the run's resources by outcome (and drifted count); no-op without the flag."""
    record = _CURRENT.get()
    if record is not None:
        record.resources = {str(k): int(v) for k, v in resources.items()}
        record.drifted = drifted


def note_plan(plan: Any) -> None:
    """Record a plan: resources by operation (``noop`` counted as unchanged, or as ``rename``
    when apply only moves its state record, as in the plan's summary), drifted ones."""
    from reconciler.plan.actions import Op

    counts: dict[str, int] = {}
    for action in plan.actions:
        if action.renames_only:
            outcome = "rename"
        else:
            outcome = "unchanged" if action.operation == Op.NOOP else str(action.operation)
        counts[outcome] = counts.get(outcome, 0) + 1
    note(counts, drifted=len(plan.changed))


def note_apply(report: Any, plan: Any) -> None:
    """Record an apply: resources by outcome (plan errors as ``error``), drifted before it."""
    counts = dict(report.counts())
    if plan.failed:
        counts["error"] = counts.get("error", 0) + len(plan.failed)
    note(counts, drifted=len(plan.changed))


def metrics_option(
    command: str, success: Callable[[int], bool] = lambda code: code == 0
) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Add ``--metrics-file`` to a command and write the file when the command ends."""

    def decorate(func: Callable[..., int]) -> Callable[..., int]:
        option = click.option(
            "--metrics-file",
            type=click.Path(dir_okay=False),
            metavar="PATH",
            help="Write the run's metrics here in Prometheus text format (atomically).",
        )

        def wrapper(*args: Any, metrics_file: str | None = None, **kw: Any) -> int:
            if not metrics_file:
                return func(*args, **kw)
            with _recording(Path(metrics_file), command, success) as finish:
                code = func(*args, **kw)
                finish(code)
                return code

        return option(wraps(func)(wrapper))

    return decorate


@contextlib.contextmanager
def _recording(
    path: Path, command: str, success: Callable[[int], bool]
) -> Iterator[Callable[[int], None]]:
    from reconciler.client.api import observe_clients

    record = RunRecord(command)
    token = _CURRENT.set(record)
    codes: list[int] = []
    try:
        with observe_clients() as stats:
            try:
                yield codes.append
            finally:
                ok = bool(codes) and success(codes[-1])
                write(path, record, stats, ok)
    finally:
        _CURRENT.reset(token)


def write(path: Path, record: RunRecord, stats: list[Any], ok: bool) -> None:
    """Write the metrics file atomically (``prometheus_client.write_to_textfile``)."""
    from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

    now = time.time()
    registry = CollectorRegistry()
    label = {"command": record.command}
    families: dict[str, Gauge] = {}

    def gauge(name: str, doc: str, value: float, **labels: str) -> None:
        if name not in families:
            names = ["command", *labels]
            families[name] = Gauge(PREFIX + name, doc, names, registry=registry)
        families[name].labels(**label, **labels).set(value)

    gauge("run_success", "1 when the last run succeeded, else 0.", 1 if ok else 0)
    gauge("run_duration_seconds", "Duration of the last run.", time.monotonic() - record.started)
    gauge("run_timestamp_seconds", "When the last run ended (Unix time).", now)
    last = now if ok else _previous_success(path, record.command)
    if last is not None:
        gauge("last_success_timestamp_seconds", "When a run last succeeded (Unix time).", last)
    for outcome, count in sorted(record.resources.items()):
        gauge("resources", "Resources of the last run by outcome.", count, outcome=outcome)
    if record.drifted is not None:
        gauge(
            "drifted_resources",
            "Resources whose live state differed from the manifests.",
            record.drifted,
        )
    requests: dict[str, int] = {}
    throttled: dict[str, int] = {}
    for item in stats:
        for interface, count in item.requests.items():
            requests[interface] = requests.get(interface, 0) + count
        for interface, count in item.throttled_by.items():
            throttled[interface] = throttled.get(interface, 0) + count
    for interface in sorted(requests):
        gauge(
            "requests",
            "HTTP requests sent, retries included.",
            requests[interface],
            interface=interface,
        )
        gauge(
            "throttled_requests",
            "Requests the server answered with 429.",
            throttled.get(interface, 0),
            interface=interface,
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(path), registry)


def _previous_success(path: Path, command: str) -> float | None:
    """Return the last success timestamp the previous file recorded for ``command``."""
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
