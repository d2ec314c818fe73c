"""The local backend: the state document in a file, by default in the project root.

The default location is ``.reconcile/state.json`` in the project root (the nearest directory
from the current one upwards holding ``reconcile.yaml`` or ``.reconcile/``, else the git work
tree's top), so it never depends on which manifests a command names.

Written atomically (temp file in the same directory, fsync, rename, directory fsync) after
every action so a killed run loses nothing it applied, mode 0600. Locked for the whole run with
an OS lock (flock: released by the kernel when a holder dies, so a dead holder's lock is taken
over at once) plus a holder record file naming the holder for the message another run prints.
The compare-and-set version is the file's identity (inode, size, mtime): a rename always
brings a new inode, so a file replaced behind this run's back is noticed before it is
overwritten. The watch lease (``LocalLease``) is a second file lock beside the state.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # filelock is imported when a lock is taken: plan only reads the state
    from filelock import FileLock

from reconciler.model.errors import StateConflictError, StateError, StateLockedError
from reconciler.model.json import JsonMapping, JsonObject
from reconciler.state import backend as _backend
from reconciler.state.backend import Holder, Version, holder_age
from reconciler.state.document import (
    STATE_FORMAT_VERSION,
    DashboardRecord,
    State,
)

STATE_DIR = ".reconcile"
DEFAULT_STATE = Path(STATE_DIR) / "state.json"
# The project file (``reconcile.yaml``) marks a project root, as ``.reconcile/`` does.
PROJECT_FILE = "reconcile.yaml"

__all__ = [
    "STATE_FORMAT_VERSION",
    "DashboardRecord",
    "State",
    "find_project_root",
    "resolve_state_path",
]


# How long a run that gives up waits for the live holder's record (see _live_holder).
_RECORD_GRACE_SECONDS = 2.0


def _alive_here(record: dict[str, Any]) -> bool:
    """Whether the record names a process that is running (other hosts count as alive)."""
    if record.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(record.get("pid", 0)), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def write_record(path: Path, record: JsonMapping) -> None:
    """Write a lock holder's record file whole (temp file and rename): a reader never sees half."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_record(path: Path) -> JsonObject | None:
    """Return a lock holder's record file (None when it is missing or unreadable)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class LocalBackend:
    """A state file on this machine's disk."""

    remote = False

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.description = str(self.path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._holder_path = self.path.with_name(self.path.name + ".holder")
        self._lock: FileLock | None = None

    def read(self) -> tuple[bytes | None, Version]:
        """Return the file's bytes and identity (None, None when it does not exist)."""
        try:
            with open(self.path, "rb") as handle:
                return handle.read(), _identity(os.fstat(handle.fileno()))
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise StateError(f"state file {self.path} cannot be read ({exc})") from None

    def _current(self) -> Version:
        try:
            return _identity(os.stat(self.path))
        except FileNotFoundError:
            return None

    def write(self, data: bytes, expected: Version) -> Version:
        """Replace the file atomically if it is still the one read as ``expected``."""
        if self._current() != expected:
            raise StateConflictError(self.description)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
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
        return self._current()

    def acquire(self, holder: Holder, timeout: float) -> None:
        """Take the file lock (a dead holder's lock is free: the kernel released it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock, Timeout

        lock = FileLock(str(self._lock_path), timeout=timeout)
        try:
            lock.acquire(timeout=timeout, poll_interval=_backend.POLL_SECONDS)
        except Timeout:
            record = self._live_holder()
            raise StateLockedError(
                self.description, record, waited=timeout, age=holder_age(record)
            ) from None
        self._lock = lock
        write_record(self._holder_path, holder.to_dict())

    def _live_holder(self) -> dict[str, Any] | None:
        """The holder's record, waiting a moment for it when the holder has yet to write it.

        A holder takes the lock, then writes its record: a run that gives up in between would
        find none (or a dead process's), so it re-reads briefly until a live holder's appears.
        """
        until = time.monotonic() + _RECORD_GRACE_SECONDS
        while True:
            record = read_record(self._holder_path)
            if (record and _alive_here(record)) or time.monotonic() >= until:
                return record
            time.sleep(0.05)

    def release(self) -> None:
        """Remove the holder record and give back the file lock."""
        if self._lock is None:
            return
        with contextlib.suppress(OSError):
            self._holder_path.unlink()
        self._lock.release()
        self._lock = None

    def unlock(self, lock_id: str) -> str:
        """Clear a dead run's holder record; a live holder's OS lock cannot be taken away."""
        record = read_record(self._holder_path)
        if record is None or record.get("lockId") != lock_id:
            raise StateError(f"state {self.description} has no lock with ID {lock_id}")
        from filelock import FileLock, Timeout

        probe = FileLock(str(self._lock_path), timeout=0)
        try:
            probe.acquire(timeout=0)
        except Timeout:
            raise StateError(
                f"lock {lock_id} on {self.description} is held by a live process (pid "
                f"{record.get('pid')} on {record.get('host')}); it is released when that run ends"
            ) from None
        try:
            with contextlib.suppress(OSError):
                self._holder_path.unlink()
        finally:
            probe.release()
        return f"Removed the record of lock {lock_id} (its process had ended; the lock was already free)."

    def close(self) -> None:
        """Nothing to close for a file."""

    def lease(self, holder: Holder, seconds: float) -> LocalLease:
        """Return the watch lease of this file (freed by the OS when its holder dies)."""
        return LocalLease(self.path, holder)


class LocalLease:
    """The watch lease of a state file: a file lock beside it and its holder's record.

    The OS releases the lock when the holder dies, so ``seconds`` plays no part; it is
    ``exclusive``: a second watch of the same file on this machine refuses to start.
    """

    exclusive = True

    def __init__(self, state: Path, holder: Holder) -> None:
        self.path = state.with_name(state.name + ".watch.lock")
        self.record_path = state.with_name(state.name + ".watch.json")
        self.description = str(self.path)
        self._holder = holder
        self._lock: FileLock | None = None

    def try_acquire(self) -> bool:
        """Take the file lock without waiting (a no-op while held)."""
        if self._lock is not None:
            return True
        from filelock import FileLock, Timeout

        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return False
        self._lock = lock
        write_record(self.record_path, _backend.lease_record(self._holder))
        return True

    def holder(self) -> JsonObject | None:
        """Return the record the holder wrote."""
        return read_record(self.record_path)

    def release(self) -> None:
        """Remove the record and unlock."""
        if self._lock is not None:
            self.record_path.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None


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


def load_state(path: Path) -> State:
    """Read a local state file without locking (a new state with a fresh key when absent)."""
    return _backend.read_state(LocalBackend(path))


@contextlib.contextmanager
def locked_state(path: Path, *, timeout: float = 0.0) -> Iterator[State]:
    """Hold a local state file's lock for the whole block and yield the loaded state."""
    with _backend.locked_state(LocalBackend(path), timeout=timeout) as state:
        yield state
