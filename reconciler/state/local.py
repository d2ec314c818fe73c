"""The state file: what the API cannot tell us, kept in the project root.

The default location is ``.reconcile/state.json`` in the project root (the nearest directory
from the current one upwards holding ``reconcile.yaml`` or ``.reconcile/``, else the git work
tree's top), so it never depends on which manifests a command names.

The service never returns write-only secrets, and (with only the create endpoint) cannot list
dashboards, so reconcile records, per resource: secret fingerprints (HMAC-SHA256 with a random
key created with the state — never a secret), the managed field paths last applied, the
dashboard id and content hash per ``metadata.name``, and the organization's values after the
last apply (for servers that cannot read an organization). The file is JSON, versioned,
written atomically (temp file, fsync, rename) after every action so a killed run loses nothing
it applied, and locked for the whole run with an OS lock (released by the kernel when a holder
dies, so a stale lock from a dead process never blocks) plus a holder record naming its pid
and start time for the message another run prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets as _random
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from reconciler.model.errors import StateError

STATE_FORMAT_VERSION = 1
STATE_DIR = ".reconcile"
DEFAULT_STATE = Path(STATE_DIR) / "state.json"
# The project file (``reconcile.yaml``) marks a project root, as ``.reconcile/`` does.
PROJECT_FILE = "reconcile.yaml"


@dataclass(frozen=True)
class DashboardRecord:
    """What state remembers about a dashboard this tool created or adopted."""

    id: str | None
    content_hash: str | None
    created_by_us: bool = False
    uncertain: bool = False


@dataclass
class State:
    """The decoded state file."""

    path: Path
    key: bytes
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    exists: bool = False
    # Each resource's serialised line, kept between saves (entries change through record/forget).
    _lines: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    # -- reads ---------------------------------------------------------------------------------

    def fingerprints(self, resource_key: str) -> dict[str, str]:
        """Return the secret fingerprints recorded for a resource."""
        entry = self.resources.get(resource_key, {})
        raw = entry.get("secrets", {})
        return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}

    def dashboard(self, name: str) -> DashboardRecord | None:
        """Return what state recorded for the dashboard named ``name``."""
        entry = self.resources.get(f"Dashboard/{name}")
        if not entry:
            return None
        return DashboardRecord(
            id=entry.get("id"),
            content_hash=entry.get("contentHash"),
            created_by_us=bool(entry.get("createdByUs")),
            uncertain=bool(entry.get("uncertain")),
        )

    def dashboards(self) -> dict[str, DashboardRecord]:
        """Return every dashboard record by name."""
        out: dict[str, DashboardRecord] = {}
        for key in self.resources:
            if key.startswith("Dashboard/"):
                record = self.dashboard(key.split("/", 1)[1])
                if record is not None:
                    out[key.split("/", 1)[1]] = record
        return out

    def organization_values(self, resource_key: str) -> dict[str, Any] | None:
        """Return the organization values recorded at the last apply, if any."""
        entry = self.resources.get(resource_key, {})
        values = entry.get("observed")
        return dict(values) if isinstance(values, dict) else None

    # -- writes --------------------------------------------------------------------------------

    def record(self, resource_key: str, **values: Any) -> None:
        """Merge ``values`` into a resource's entry (None removes a key) and stamp it."""
        self._lines.pop(resource_key, None)
        entry = self.resources.setdefault(resource_key, {})
        for name, value in values.items():
            if value is None:
                entry.pop(name, None)
            elif name == "secrets":
                entry.setdefault("secrets", {}).update(value)
            else:
                entry[name] = value
        entry["appliedAt"] = datetime.now(UTC).isoformat(timespec="seconds")

    def forget(self, resource_key: str) -> None:
        """Drop a resource's entry."""
        self._lines.pop(resource_key, None)
        self.resources.pop(resource_key, None)

    def to_json(self) -> dict[str, Any]:
        """Return the on-disk document."""
        return {
            "formatVersion": STATE_FORMAT_VERSION,
            "key": self.key.hex(),
            "resources": {k: self.resources[k] for k in sorted(self.resources)},
        }

    def save(self) -> None:
        """Write the state atomically: temp file in the same directory, fsync, rename."""
        self.write(self.serialize())

    def serialize(self) -> str:
        """Return the file's text for the state as it is now (a consistent snapshot)."""
        return _dumps(self.to_json(), self._lines)

    def write(self, data: str) -> None:
        """Write ``data`` (from ``serialize``) atomically; safe to call from a worker thread."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        self.exists = True


def _dumps(document: dict[str, Any], cache: dict[str, str]) -> str:
    """Return the state as JSON with one resource per line (json's C encoder: saved per action)."""
    # json.dumps(indent=2) runs the pure-Python encoder, and a save follows every action: it
    # dominated a 1,000-pipe apply (quadratic). One line per resource keeps the file readable,
    # and ``cache`` keeps the lines of the resources no action touched since the last save.
    head = {k: v for k, v in document.items() if k != "resources"}
    lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    items = []
    for key, value in document["resources"].items():
        line = cache.get(key)
        if line is None:
            line = cache[key] = (
                f"    {json.dumps(key)}: {json.dumps(value, separators=(', ', ': '))}"
            )
        items.append(line)
    body = "{}" if not items else "{\n" + ",\n".join(items) + "\n  }"
    return "{\n" + "\n".join(lines) + f'\n  "resources": {body}\n}}\n'


def load_state(path: Path) -> State:
    """Read the state file (a new, empty state with a fresh key when it does not exist)."""
    if not path.exists():
        return State(path=path, key=_random.token_bytes(32))
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateError(
            f"state file {path} is unreadable or corrupt ({exc}); it was left untouched"
        ) from None
    if not isinstance(raw, dict) or type(raw.get("formatVersion")) is not int:
        raise StateError(f"state file {path} is not a reconcile state file; it was left untouched")
    version = raw["formatVersion"]
    if version > STATE_FORMAT_VERSION:
        raise StateError(
            f"state file {path} has format {version}, newer than this reconcile understands "
            f"({STATE_FORMAT_VERSION}); upgrade reconcile"
        )
    try:
        key = bytes.fromhex(str(raw["key"]))
        resources = raw.get("resources", {})
        if len(key) < 16 or not isinstance(resources, dict):
            raise ValueError("bad key or resources")
    except (KeyError, ValueError) as exc:
        raise StateError(f"state file {path} is corrupt ({exc}); it was left untouched") from None
    return State(path=path, key=key, resources=resources, exists=True)


def find_project_root(start: Path | None = None) -> Path:
    """Return the project root: the nearest directory from ``start`` (default: the cwd) upwards
    holding ``reconcile.yaml`` or ``.reconcile/``, else the top of the git work tree, else ``start``."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / PROJECT_FILE).is_file() or (directory / STATE_DIR).is_dir():
            return directory
        if (directory / ".git").exists():
            # Never look above the repository: a marker there belongs to something else.
            return directory
    return here


def default_state_path(manifest_paths: Sequence[str] = ()) -> Path:
    """Return the default state file: ``.reconcile/state.json`` in the project root.

    It does not depend on which manifests a command names (``plan manifests`` and ``plan
    manifests/pipes/orders.yaml`` share one state); ``manifest_paths`` is only used to find a
    state file left at the old default location beside the manifests (see ``resolve_state_path``).
    """
    return resolve_state_path(manifest_paths)[0]


def resolve_state_path(manifest_paths: Sequence[str] = ()) -> tuple[Path, str | None]:
    """Return the default state path and, when it is a legacy location, a deprecation message."""
    root = find_project_root()
    current = root / DEFAULT_STATE
    if current.exists():
        return current, None
    for given in manifest_paths:
        path = Path(given).resolve()
        start = path if path.is_dir() else path.parent
        for directory in (start, *start.parents):
            legacy = directory / DEFAULT_STATE
            if legacy.is_file() and legacy != current:
                return legacy, (
                    f"using the state file {_shown(legacy)} found beside the manifests; this default "
                    f"is deprecated: move it to {_shown(current)} (the project root) or pass --state"
                )
            if directory == root or (directory / ".git").exists():
                break
    return current, None


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@contextlib.contextmanager
def locked_state(path: Path, *, timeout: float = 0.0) -> Iterator[State]:
    """Hold the state's lock for the whole block and yield the loaded state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    holder_path = path.with_name(path.name + ".holder")
    lock = FileLock(str(lock_path), timeout=timeout)
    try:
        lock.acquire(timeout=timeout, poll_interval=0.1)
    except Timeout:
        raise StateError(_held_message(path, holder_path, timeout)) from None
    try:
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "startedAt": datetime.now(UTC).isoformat(timespec="seconds"),
            "started": time.time(),
        }
        holder_path.write_text(json.dumps(holder) + "\n", encoding="utf-8")
        yield load_state(path)
    finally:
        with contextlib.suppress(OSError):
            holder_path.unlink()
        lock.release()


def _held_message(path: Path, holder_path: Path, timeout: float) -> str:
    try:
        holder = json.loads(holder_path.read_text(encoding="utf-8"))
        who = f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('startedAt')}"
    except (OSError, ValueError):
        who = "another reconcile run"
    waited = f" after waiting {timeout:g}s" if timeout else ""
    return f"state file {path} is locked by {who}{waited}; wait for it to finish or pass --lock-timeout SECONDS"
