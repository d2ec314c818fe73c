"""Where the state document lives: the backend protocol and the session every run uses.

A backend stores one document per workspace and offers four operations, the same on every
store: ``read`` (the document's bytes and an opaque version token, or ``None`` when the state
is new), ``write`` (compare-and-set: it succeeds only if the stored version is still the one
read, so a writer that lost its lock can never overwrite a newer state), ``acquire``/``release``
(a lock for the whole run holding a ``Holder`` record, waited for up to ``--lock-timeout``)
and ``unlock`` (force-removal of a lock left by a dead run, named by its lock ID). Each also offers the
``watch`` lease (``lease``: one leader per workspace), built on the same store's own locking.

``reconciler.state.stores.open_backend`` picks the implementation from the ``--state`` address
(the backends import this module, never the other way round). ``locked_state`` is the one way
a run holds a state: lock, read, decode, and bind writes to compare-and-set on the version read.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shlex
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, TypeAlias
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from reconciler.model.json import JsonObject, JsonValue
from reconciler.model.resources import check_form
from reconciler.state.document import State, decode, new_state

DEFAULT_WORKSPACE = "default"
_WORKSPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# How often a waiting run asks again for a lock held elsewhere.
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: written with the lock, printed to whoever waits for it."""

    lockId: str
    user: str
    host: str
    pid: int
    command: str
    startedAt: str
    started: float

    @classmethod
    def current(cls, command: str | None = None) -> Holder:
        """Return a record for this process, with a fresh lock ID."""
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        return cls(
            lockId=uuid.uuid4().hex,
            user=user,
            host=socket.gethostname(),
            pid=os.getpid(),
            command=command or _command_line(),
            startedAt=datetime.now(UTC).isoformat(timespec="seconds"),
            started=time.time(),
        )

    def to_dict(self) -> JsonObject:
        """Return the record as JSON-ready data."""
        return asdict(self)


def _command_line() -> str:
    program = Path(sys.argv[0]).name if sys.argv else ""
    # ``python -m reconciler`` runs ``__main__.py``: name the tool, not the file.
    program = "reconcile" if program in ("", "__main__.py", "-c") else program
    args = [program, *sys.argv[1:]]
    # Only the command and its sub-commands: an option value could be a secret.
    shown = []
    for arg in args:
        if arg.startswith("-"):
            break
        shown.append(arg)
    return shlex.join(shown[:3])


def holder_age(record: Mapping[str, object] | None) -> float | None:
    """Return how long ago a holder record was written (None when unknown)."""
    if not record:
        return None
    started = record.get("started")
    return time.time() - float(started) if isinstance(started, (int, float)) else None


# A store's version of the document, compared only by the store that issued it: a file's identity
# (inode, size, mtime, ctime), a row's version number, an object's ETag; None: no document yet.
Version: TypeAlias = tuple[int, int, int, int] | int | str | None


class Backend(Protocol):
    """One workspace's state document in one store."""

    description: str  # printable: never holds a password
    remote: bool  # True when nothing is kept in the working directory

    def read(self) -> tuple[bytes | None, Version]:
        """Return the document's bytes (None when new) and its version token."""
        ...

    def write(self, data: bytes, expected: Version) -> Version:
        """Store ``data`` if the version is still ``expected``; return the new version."""
        ...

    def acquire(self, holder: Holder, timeout: float) -> None:
        """Take the lock (waiting up to ``timeout`` s) or raise ``StateLockedError``."""
        ...

    def release(self) -> None:
        """Give back the lock taken by ``acquire``."""
        ...

    def unlock(self, lock_id: str) -> str:
        """Remove a lock left by a dead run; return what was done."""
        ...

    def close(self) -> None:
        """Release connections (a lease taken with ``lease`` keeps its own)."""
        ...

    def lease(self, holder: Holder, seconds: float) -> Lease:
        """Return the watch lease of this workspace, claimed for ``holder`` (see ``Lease``)."""
        ...


class Lease(Protocol):
    """A renewable claim to lead one state and workspace: only its holder runs ``watch`` cycles.

    Apart from the state lock (which every apply, the leader's included, still takes for each
    write), so a CI ``apply`` and the leader coordinate exactly as two applies do. A lease is
    freed by ``release``, and when its holder dies: at once where the store ties it to the
    holder's process or session (a file lock, a database session), else once ``seconds`` pass
    without a renewal. It keeps a connection of its own: closing the backend that made it does
    not end it. Every call blocks (the drivers are synchronous): callers run them in a thread.
    """

    description: str  # printable: never holds a password
    # True: a second replica must refuse to start (a state on this machine's disk);
    # False: it stands by until the lease is free (a shared store).
    exclusive: bool

    def try_acquire(self) -> bool:
        """Take or renew the lease; return whether this holder holds it now."""
        ...

    def holder(self) -> JsonObject | None:
        """Return the current holder's record (None when the lease is free or unreadable)."""
        ...

    def release(self) -> None:
        """Give the lease back if this holder has it (another may take it at once)."""
        ...


def lease_record(holder: Holder, **extra: JsonValue) -> JsonObject:
    """Return what a lease shows of its holder: who and where, never the command line."""
    # An option value on the command line could be a secret: the lease never shows it.
    return {
        "lockId": holder.lockId,
        "user": holder.user,
        "host": holder.host,
        "pid": holder.pid,
        **extra,
    }


def describe_holder(record: Mapping[str, object] | None) -> str:
    """Return a lease holder's record for people: ``pid 123 on host (user name)``."""
    if not record:
        return "an unknown process"
    return f"pid {record.get('pid')} on {record.get('host')} (user {record.get('user')})"


def check_workspace(name: str) -> str:
    """Return ``name`` if it is a valid workspace name, else raise ``ConfigError``."""
    return check_form(
        name,
        _WORKSPACE,
        "workspace ",
        "is not valid: use letters, digits, '.', '_' or '-' (at most 64, starting with a "
        "letter or digit)",
    )


def workspace_name(name: str, workspace: str) -> str:
    """Return the file or object name of a workspace: ``state.json`` → ``state.WS.json``."""
    if workspace == DEFAULT_WORKSPACE:
        return name
    head, sep, tail = name.rpartition("/")
    stem, dot, ext = tail.rpartition(".")
    leaf = f"{stem}.{workspace}.{ext}" if dot and stem else f"{tail}.{workspace}"
    return f"{head}{sep}{leaf}"


def redact_address(url: str) -> str:
    """Return a ``--state`` address without a password (in the authority or the query)."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{hostport}" if user else hostport
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def read_state(backend: Backend) -> State:
    """Read the state without locking (a consistent snapshot: every write is atomic)."""
    data, version = backend.read()
    state = new_state(backend.description) if data is None else decode(data, backend.description)
    state.sink = _cas_sink(backend, version)
    return state


@contextlib.contextmanager
def locked_state(
    backend: Backend, *, timeout: float = 0.0, command: str | None = None
) -> Iterator[State]:
    """Hold the backend's lock for the whole block and yield the state read under it."""
    backend.acquire(Holder.current(command), timeout)
    try:
        yield read_state(backend)
    finally:
        backend.release()


def _cas_sink(backend: Backend, version: Version) -> Callable[[bytes], None]:
    cell = [version]

    def sink(data: bytes) -> None:
        cell[0] = backend.write(data, cell[0])

    return sink


__all__ = [
    "DEFAULT_WORKSPACE",
    "Backend",
    "Holder",
    "Lease",
    "check_workspace",
    "create_state",
    "describe_holder",
    "locked_state",
    "read_state",
    "redact_address",
]


def create_state(backend: Backend, state: State, *, timeout: float = 0.0) -> None:
    """Write a new state (its key) under the lock; refuse if another run created one meanwhile."""
    from reconciler.model.errors import StateError

    with locked_state(backend, timeout=timeout) as current:
        if current.exists:
            raise StateError(
                f"state {backend.description} was created by another run since this one read it; "
                "run plan again"
            )
        backend.write(state.serialize().encode("utf-8"), None)
        state.exists = True
