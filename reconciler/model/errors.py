"""The exception tree of reconcile: its root and the branches outside the API.

Every failure the tool can explain is a ``ReconcileError``. Branches carry the fields their
message is built from (file/line for manifests, the lock's holder for state), so renderers
and the CLI never parse message strings. This module holds the root, the manifest, plan,
state and configuration branches, ``Interrupted``, and ``error_entries`` (the ``errors[]`` of
a machine document); the API branch (``ApiError`` and the errors that end a run's talk with
an interface) is ``reconciler.model.apierrors``. The CLI maps the tree to exit codes in one
place.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from reconciler.model.json import JsonLike, JsonMapping
from reconciler.model.text import shown

__all__ = [
    "ConfigError",
    "Interrupted",
    "Location",
    "ManifestError",
    "ManifestErrors",
    "PlanError",
    "ReconcileError",
    "StateConflictError",
    "StateError",
    "StateLockedError",
    "error_entries",
    "suggest",
]


def suggest(word: object, choices: Iterable[object]) -> str:
    """Return `` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class ReconcileError(Exception):
    """Root of every error reconcile reports to a user."""

    exit_code = 1
    # What ``to_dict`` gives beside type and message: JSON key -> attribute.
    fields: ClassVar[Mapping[str, str]] = {}

    def to_dict(self) -> dict[str, JsonLike]:
        """Return a JSON-friendly description of the error: type, message and ``fields``."""
        described: dict[str, JsonLike] = {"type": type(self).__name__, "message": str(self)}
        for key, attribute in self.fields.items():
            described[key] = getattr(self, attribute)
        return described


@dataclass(frozen=True)
class Location:
    """A place in a manifest: file, 1-based line and column."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


class ManifestError(ReconcileError):
    """One problem in one manifest, located at file:line:col and a JSON path."""

    def __init__(self, location: Location, path: str, message: str) -> None:
        self.location = location
        self.path = path
        self.message = message
        super().__init__(self._build())

    def __reduce__(self) -> tuple[type[ManifestError], tuple[Location, str, str]]:
        # The default pickling would call __init__ with the message alone (as for any exception).
        return (type(self), (self.location, self.path, self.message))

    def _build(self) -> str:
        # The path and message may quote the manifest: shown escaped (``model.text``).
        where = str(self.location)
        if self.path:
            return f"{where}: {shown(self.path)}: {shown(self.message)}"
        return f"{where}: {shown(self.message)}"

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the error as ``{file, line, col, path, message}``."""
        return {
            "file": self.location.file,
            "line": self.location.line,
            "col": self.location.col,
            "path": self.path,
            "message": self.message,
        }


class ManifestErrors(ReconcileError):
    """Several manifest problems reported together (all at once, nothing sent)."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def to_dict(self) -> dict[str, JsonLike]:
        """Return every error as a list of objects."""
        return {"type": "ManifestErrors", "errors": [e.to_dict() for e in self.errors]}


class Interrupted(ReconcileError):
    """A request not sent, or a run ended, because of SIGINT/SIGTERM (``reason`` names it)."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"not started: apply was interrupted by {reason}")


class PlanError(ReconcileError):
    """A resource whose desired state cannot be planned (or a saved plan that cannot be used)."""


class StateError(ReconcileError):
    """The state file is unreadable, of a newer format, or locked by another run."""


class ConfigError(ReconcileError):
    """Bad options or environment: missing credentials, insecure URL, unknown target."""


class StateLockedError(StateError):
    """Another run holds the state's lock (``holder`` is its record, when it could be read)."""

    fields: ClassVar[Mapping[str, str]] = {
        "state": "location",
        "holder": "holder",
        "waited": "waited",
    }

    def __init__(
        self,
        location: str,
        holder: JsonMapping | None,
        *,
        waited: float = 0.0,
        age: float | None = None,
        stale_hint: bool = False,
    ) -> None:
        self.location = location
        self.holder = dict(holder) if holder else None
        self.waited = waited
        self.age = age
        self.stale_hint = stale_hint
        super().__init__(self._build())

    def _build(self) -> str:
        h = self.holder
        if h:
            who = f"pid {h.get('pid')} on {h.get('host')} (user {h.get('user')}, command {h.get('command')!r})"
            who += f", started {h.get('startedAt')}"
            if self.age is not None:
                who += f" ({_duration(self.age)} ago)"
            who += f", lock ID {h.get('lockId')}"
        else:
            who = "another reconcile run"
        waited = f" after waiting {self.waited:g}s" if self.waited else ""
        text = f"state {self.location} is locked by {who}{waited}; wait for it to finish or pass --lock-timeout SECONDS"
        if self.stale_hint and h:
            text += f". If that run is dead, remove its lock with: reconcile state unlock {h.get('lockId')}"
        return text


class StateConflictError(StateError):
    """A compare-and-set write found the state changed since it was read (nothing was written)."""

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(
            f"state {location} was changed by another writer since this run read it; "
            "nothing was written (this run lost its lock, or the state was edited by hand): run again"
        )


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def error_entries(exc: ReconcileError) -> list[dict[str, JsonLike]]:
    """Return the ``errors[]`` entries of a machine document for ``exc`` (one per manifest problem)."""
    if isinstance(exc, ManifestErrors):
        return [{"type": "ManifestError", **e.to_dict()} for e in exc.errors]
    return [{**exc.to_dict(), "type": type(exc).__name__, "message": str(exc)}]
