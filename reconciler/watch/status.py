"""What a watch has seen: the last cycles and one row per resource, for the page and the API.

``WatchStatus`` is the one record the loop writes and the HTTP endpoint reads (both on the same
event loop, so no lock is needed). A resource row says whether the resource is in sync, drifted
(since when), corrected (when) or failed (with the message), and where its manifest is. Nothing
here holds a secret: rows carry only kinds, names, manifest locations, operations and the plan's
error messages, which never quote a secret value. ``document`` is the ``/api/status`` JSON
(``schemas/watch-status.schema.json``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from reconciler.apply.results import ActionResult, Outcome
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.plan.actions import Action

__all__ = ["WatchStatus"]


STATUS_FORMAT_VERSION = 1
# Cycles kept for the page and /api/status.
KEPT_CYCLES = 20


class CycleResult(StrEnum):
    """How one cycle ended."""

    IN_SYNC = "in-sync"  # planned, nothing to change
    DRIFT = "drift"  # changes found, not corrected (detect mode)
    CORRECTED = "corrected"  # changes found and applied
    FAILED = "failed"  # a request, the state or an apply failed
    INVALID = "invalid"  # the manifests or settings are invalid: nothing was sent
    # SIGTERM/SIGINT stopped the apply: the requests in flight finished, the rest were not
    # started (they are drifted still, for the next run); neither a failure nor a success.
    INTERRUPTED = "interrupted"


class ResourceState(StrEnum):
    """Where one resource stands after the last cycle that planned it."""

    IN_SYNC = "in-sync"
    DRIFTED = "drifted"
    CORRECTED = "corrected"
    FAILED = "failed"
    # No cycle could plan it since ``unknown_since`` (invalid manifests, a failed read).
    UNKNOWN = "unknown"


def iso(moment: float | None) -> str | None:
    """Return a Unix time as ISO 8601 UTC (seconds), or None."""
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Cycle:
    """One cycle: when, how it ended, what it found and corrected, what it cost."""

    number: int
    started: float
    result: CycleResult
    duration: float
    found: int = 0
    corrected: int = 0
    requests: int = 0
    message: str = ""
    found_by_kind: dict[str, int] = field(default_factory=dict)
    corrected_by_kind: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, JsonLike]] = field(default_factory=list)
    # The signal that interrupted the cycle's apply (its number; 0: none).
    stopped_by: int = 0

    @property
    def failed(self) -> bool:
        """Tell whether the cycle failed (an invalid manifest counts as failed)."""
        return self.result in (CycleResult.FAILED, CycleResult.INVALID)

    @property
    def succeeded(self) -> bool:
        """Tell whether the cycle did all it set out to (an interrupted one did not)."""
        return not self.failed and self.result is not CycleResult.INTERRUPTED

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the cycle as JSON-ready data."""
        return {
            "number": self.number,
            "startedAt": iso(self.started),
            "result": str(self.result),
            "durationSeconds": round(self.duration, 3),
            "changesFound": self.found,
            "changesCorrected": self.corrected,
            "requests": self.requests,
            "message": self.message,
            "errors": list(self.errors),
        }


@dataclass
class ResourceRow:
    """One resource's standing."""

    key: str
    kind: str
    location: str
    state: ResourceState = ResourceState.IN_SYNC
    operation: str = ""
    drifted_since: float | None = None
    corrected_at: float | None = None
    message: str = ""
    unknown_since: float | None = None

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the row as JSON-ready data."""
        return {
            "resource": self.key,
            "kind": self.kind,
            "location": self.location,
            "state": str(self.state),
            "operation": self.operation,
            "driftedSince": iso(self.drifted_since),
            "correctedAt": iso(self.corrected_at),
            "unknownSince": iso(self.unknown_since),
            "message": self.message,
        }

    def describe(self) -> str:
        """Return the row's standing for people: ``drifted since … (update)``, ``in sync``."""
        match self.state:
            case ResourceState.DRIFTED:
                return f"drifted since {iso(self.drifted_since)} ({self.operation})"
            case ResourceState.CORRECTED:
                return f"corrected at {iso(self.corrected_at)}"
            case ResourceState.FAILED:
                return f"failed: {self.message}"
            case ResourceState.UNKNOWN:
                return f"unknown since {iso(self.unknown_since)} ({self.message})"
            case ResourceState.IN_SYNC if self.corrected_at is not None:
                return f"in sync (corrected at {iso(self.corrected_at)})"
        return "in sync"


@dataclass
class WatchStatus:
    """Everything the endpoint shows; written by the loop only."""

    mode: str
    interval: float
    state: str  # the state's printable description (never a password)
    workspace: str
    environment: str | None = None
    organization: str | None = None
    started: float = field(default_factory=time.time)
    leader: bool = False
    holder: JsonMapping | None = None  # the lease holder's record, when known
    lease_checked: bool = False
    lease_error: str = ""
    running: bool = False
    cycles: deque[Cycle] = field(default_factory=lambda: deque(maxlen=KEPT_CYCLES))
    resources: dict[str, ResourceRow] = field(default_factory=dict)
    last_success: float | None = None
    next_cycle: float | None = None
    # When the cycles became invalid (manifests or settings), while they still are.
    invalid_since: float | None = None

    @property
    def last(self) -> Cycle | None:
        """Return the last completed cycle."""
        return self.cycles[-1] if self.cycles else None

    def not_ready(self) -> str | None:
        """Return why the watch is not ready (None when it is).

        A standby that could read the lease is ready: it is doing its job (waiting to take
        over), and a rolling update of two replicas must not wait for it to lead.
        """
        if not self.running:
            return "the watch loop is not running"
        if self.lease_error:
            return f"the lease cannot be read: {self.lease_error}"
        if not self.leader:
            return None if self.lease_checked else "the lease has not been checked yet"
        last = self.last
        if last is None:
            return "no cycle has completed yet"
        if last.failed:
            return f"the last cycle (#{last.number}) {last.result}: {last.message}"
        return None

    def document(self) -> dict[str, JsonLike]:
        """Return the ``/api/status`` document."""
        holder = self.holder or {}
        return {
            "formatVersion": STATUS_FORMAT_VERSION,
            "mode": self.mode,
            "intervalSeconds": self.interval,
            "state": self.state,
            "workspace": self.workspace,
            "environment": self.environment,
            "organizationId": self.organization,
            "invalidSince": iso(self.invalid_since),
            "manifestErrors": self.manifest_errors(),
            "startedAt": iso(self.started),
            "leader": self.leader,
            "holder": {k: holder[k] for k in ("host", "pid", "user", "expiresAt") if k in holder}
            or None,
            "ready": self.not_ready() is None,
            "notReadyReason": self.not_ready(),
            "lastSuccessAt": iso(self.last_success),
            "nextCycleAt": iso(self.next_cycle),
            "cycles": [c.to_dict() for c in reversed(self.cycles)],
            "resources": [self.resources[k].to_dict() for k in sorted(self.resources)],
        }

    def manifest_errors(self) -> list[JsonLike]:
        """Return the last cycle's manifest errors, each at its ``file:line:col``."""
        last = self.last
        if last is None or last.result is not CycleResult.INVALID:
            return []
        return [
            {
                "location": f"{e.get('file')}:{e.get('line')}:{e.get('col')}",
                "path": e.get("path"),
                "message": e.get("message"),
            }
            for e in last.errors
        ]

    def record_unknown(self, now: float, reason: str) -> None:
        """Mark every row unknown (since ``now`` unless it already was): no plan was made."""
        for row in self.resources.values():
            if row.state is not ResourceState.UNKNOWN:
                row.state, row.unknown_since, row.operation = ResourceState.UNKNOWN, now, ""
            row.message = reason

    def record_invalid(self, now: float, invalid: bool) -> None:
        """Record whether the cycle starting ``now`` was invalid (its rows then unknown)."""
        if not invalid:
            self.invalid_since = None
            return
        if self.invalid_since is None:
            self.invalid_since = now
        self.record_unknown(self.invalid_since, "the manifests are invalid")

    def record_plan(self, actions: Iterable[Action], now: float) -> None:
        """Update the rows from a plan's actions (``plan.actions``); drop resources it lost."""
        seen: set[str] = set()
        for action in actions:
            loc = action.location
            where = f"{loc.file}:{loc.line}" if loc.line > 0 else str(loc.file)
            row = self.resources.get(action.key) or ResourceRow(action.key, action.kind, where)
            row.location = where
            if action.errors:
                row.state, row.message = ResourceState.FAILED, "; ".join(action.errors)
                row.operation = str(action.operation)
            elif action.has_changes:
                if row.state is not ResourceState.DRIFTED:
                    row.drifted_since = now
                row.state, row.message, row.operation = (
                    ResourceState.DRIFTED,
                    "",
                    str(action.operation),
                )
            else:
                row.state, row.message, row.operation = ResourceState.IN_SYNC, "", ""
                row.drifted_since = None
            row.unknown_since = None
            self.resources[action.key] = row
            seen.add(action.key)
        for key in set(self.resources) - seen:
            del self.resources[key]

    def record_results(self, results: Iterable[ActionResult], now: float) -> None:
        """Update the rows from an apply's results: applied ones are corrected now."""
        for result in results:
            row = self.resources.get(result.key)
            if row is None:
                continue
            if result.failed:
                row.state = ResourceState.FAILED
                row.message = "; ".join(result.messages) or str(result.outcome)
            elif result.outcome is Outcome.APPLIED:
                row.state, row.corrected_at, row.drifted_since = ResourceState.CORRECTED, now, None
                row.message = ""
