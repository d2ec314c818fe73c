"""The PostgreSQL backend: one row per workspace, a session advisory lock for the run.

Address: a libpq URL (``postgresql://USER@HOST:PORT/DB?sslmode=…``); whatever it leaves out
comes from the usual ``PG*`` variables and ``~/.pgpass`` (libpq reads them), so the password
need never appear on a command line. It is never printed: messages name the URL without it.

Tables (created on first use, under a transaction-level advisory lock so that two first runs
do not race): ``reconcile_state`` (workspace, document, version, updated_at) and
``reconcile_state_locks`` (workspace, lock id, holder record, server pid). A run holds a
session advisory lock on its workspace for its whole life: the server releases it the moment
the connection ends, so a killed runner never blocks the next one. Every write is
``UPDATE … WHERE version = <read>`` (or an insert that fails if a row appeared), so a writer
that lost its lock can never overwrite a newer state. The watch lease (``PostgresLease``) is a
session advisory lock of its own key, with its holder's record in ``reconcile_watch_leases``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb

from reconciler.model.errors import StateConflictError, StateError, StateLockedError
from reconciler.model.json import JsonObject
from reconciler.state import backend as _backend
from reconciler.state.backend import Holder, Version, holder_age, redact_address

__all__: list[str] = []


STATE_TABLE = "reconcile_state"
LOCK_TABLE = "reconcile_state_locks"
LEASE_TABLE = "reconcile_watch_leases"
# Serialises the first run's CREATE TABLE among concurrent first runs.
_SCHEMA_LOCK = 0x7265636F6E63696C  # "reconcil"
# How long a run that gives up waits for the live holder's record to appear (see _holder_record).
_RECORD_GRACE_SECONDS = 2.0


class _Rows(Protocol):
    def fetchone(self) -> Sequence[object] | None: ...


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {STATE_TABLE} (
    workspace text PRIMARY KEY,
    document bytea NOT NULL,
    version bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {LOCK_TABLE} (
    workspace text PRIMARY KEY,
    lock_id text NOT NULL,
    holder jsonb NOT NULL,
    server_pid integer NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {LEASE_TABLE} (
    workspace text PRIMARY KEY,
    holder jsonb NOT NULL,
    renewed_at timestamptz NOT NULL DEFAULT now()
);
"""


def advisory_key(purpose: str, workspace: str) -> int:
    """Return the session advisory lock key of one workspace for one purpose (state, watch)."""
    digest = hashlib.sha256(f"reconcile-{purpose}:{workspace}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def advisory_holder_pid(execute: Callable[[str, tuple[int, int]], _Rows], key: int) -> int | None:
    """Return the server pid of the session holding advisory lock ``key`` (None when free).

    ``execute`` runs one statement (a connection's, or a backend's error-mapping wrapper).
    """
    hi, lo = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    row = execute(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
        "AND classid = %s::oid AND objid = %s::oid AND objsubid = 1",
        (hi, lo),
    ).fetchone()
    return int(str(row[0])) if row else None


def create_tables(conn: psycopg.Connection[TupleRow], ddl: str) -> None:
    """Run ``CREATE TABLE IF NOT EXISTS`` statements, serialised among concurrent first runs."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(ddl)


def error_text(exc: BaseException, url: str) -> str:
    """Return a driver error's first line, with the URL's password (if any) masked."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


class PostgresBackend:
    """One workspace's state in a PostgreSQL table."""

    remote = True

    def __init__(self, url: str, workspace: str, origin: str | None = None) -> None:
        self._url = url
        self._origin = origin
        self.workspace = workspace
        self.description = f"{redact_address(url)} (workspace {workspace})"
        # Said when the database cannot be reached: where the URL came from (flag, variable,
        # project-file key), so the setting to correct is named with the URL.
        named = f"workspace {workspace}, from {origin}" if origin else f"workspace {workspace}"
        self._named = f"{redact_address(url)} ({named})"
        self._conn: psycopg.Connection[Any] | None = None
        self._guard = threading.Lock()
        self._holder: Holder | None = None
        self._key = advisory_key("state", workspace)

    # -- connection ----------------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise StateError(
                    f"cannot connect to the state database {self._named}: {self._clean(exc)}"
                ) from None
            create_tables(conn, _SCHEMA)
            self._conn = conn
        return self._conn

    def _clean(self, exc: BaseException) -> str:
        return error_text(exc, self._url)

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> psycopg.Cursor[Any]:
        with self._guard:
            try:
                return self._connection().execute(sql, params)
            except psycopg.Error as exc:
                raise StateError(f"state database {self.description}: {self._clean(exc)}") from None

    # -- document ------------------------------------------------------------------------------

    def read(self) -> tuple[bytes | None, Version]:
        """Return the workspace's document and version (None, None when it has no row)."""
        row = self._run(
            f"SELECT document, version FROM {STATE_TABLE} WHERE workspace = %s",
            (self.workspace,),
        ).fetchone()
        if row is None:
            return None, None
        return bytes(row[0]), int(row[1])

    def write(self, data: bytes, expected: Version) -> Version:
        """Store ``data`` if the row's version is still ``expected``; return the new version."""
        if expected is None:
            cursor = self._run(
                f"INSERT INTO {STATE_TABLE} (workspace, document, version) VALUES (%s, %s, 1) "
                "ON CONFLICT (workspace) DO NOTHING",
                (self.workspace, data),
            )
            new = 1
        else:
            cursor = self._run(
                f"UPDATE {STATE_TABLE} SET document = %s, version = version + 1, updated_at = now() "
                "WHERE workspace = %s AND version = %s",
                (data, self.workspace, expected),
            )
            new = int(str(expected)) + 1  # this store's own version: a number
        if cursor.rowcount != 1:
            raise StateConflictError(self.description)
        return new

    # -- lock ----------------------------------------------------------------------------------

    def acquire(self, holder: Holder, timeout: float) -> None:
        """Take the workspace's session advisory lock, polling until ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            got = self._run("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
            if got and got[0]:
                break
            if time.monotonic() >= deadline:
                record = self._holder_record()
                raise StateLockedError(
                    self.description, record, waited=timeout, age=holder_age(record)
                )
            time.sleep(min(_backend.POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        self._run(
            f"INSERT INTO {LOCK_TABLE} (workspace, lock_id, holder, server_pid) "
            "VALUES (%s, %s, %s, pg_backend_pid()) ON CONFLICT (workspace) DO UPDATE SET "
            "lock_id = EXCLUDED.lock_id, holder = EXCLUDED.holder, "
            "server_pid = EXCLUDED.server_pid, acquired_at = now()",
            (self.workspace, holder.lockId, Jsonb(holder.to_dict())),
        )
        self._holder = holder

    def _holder_record(self) -> dict[str, Any] | None:
        """The record of the session that holds the lock now.

        A holder takes the advisory lock, then writes its record: a run that gives up in between
        would see no record (or a dead session's), so it waits a moment for the live holder's.
        """
        until = time.monotonic() + _RECORD_GRACE_SECONDS
        while True:
            record = self._lock_record()
            live = advisory_holder_pid(self._run, self._key)
            if live is None or (record and record.get("serverPid") == live):
                return record
            if time.monotonic() >= until:
                return record
            time.sleep(0.05)

    def _lock_record(self) -> dict[str, Any] | None:
        row = self._run(
            f"SELECT holder, server_pid FROM {LOCK_TABLE} WHERE workspace = %s", (self.workspace,)
        ).fetchone()
        if row is None:
            return None
        record = row[0] if isinstance(row[0], dict) else json.loads(row[0])
        return {**record, "serverPid": row[1]}

    def release(self) -> None:
        """Delete the holder record and release the advisory lock."""
        if self._holder is None:
            return
        holder, self._holder = self._holder, None
        if self._conn is None or self._conn.closed:
            return  # the session ended: the server already released the lock
        self._run(
            f"DELETE FROM {LOCK_TABLE} WHERE workspace = %s AND lock_id = %s",
            (self.workspace, holder.lockId),
        )
        self._run("SELECT pg_advisory_unlock(%s)", (self._key,))

    def unlock(self, lock_id: str) -> str:
        """Clear a dead session's holder record; a live session's lock ends with that session."""
        record = self._lock_record()
        if record is None or record.get("lockId") != lock_id:
            raise StateError(f"state {self.description} has no lock with ID {lock_id}")
        got = self._run("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
        if not (got and got[0]):
            raise StateError(
                f"lock {lock_id} on {self.description} is held by a live database session "
                f"(server pid {record.get('serverPid')}; pid {record.get('pid')} on "
                f"{record.get('host')}); the server releases it when that run ends. To end that "
                f"run's session now: SELECT pg_terminate_backend({record.get('serverPid')})"
            )
        try:
            self._run(
                f"DELETE FROM {LOCK_TABLE} WHERE workspace = %s AND lock_id = %s",
                (self.workspace, lock_id),
            )
        finally:
            self._run("SELECT pg_advisory_unlock(%s)", (self._key,))
        return f"Removed the record of lock {lock_id} (its session had ended; the lock was already free)."

    def close(self) -> None:
        """Close the connection (which also releases any advisory lock it held)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def lease(self, holder: Holder, seconds: float) -> PostgresLease:
        """Return the watch lease of this workspace, on a connection of its own."""
        return PostgresLease(PostgresBackend(self._url, self.workspace, self._origin), holder)


class PostgresLease:
    """The watch lease: a session advisory lock of its own key, held by a connection of its own.

    The server frees it the moment that connection ends (the holder died, was SIGKILLed or
    lost the network), so a standby that polls takes over at once: ``seconds`` plays no part.
    The holder's record is kept in ``reconcile_watch_leases`` for standbys to show.
    """

    exclusive = False

    def __init__(self, db: PostgresBackend, holder: Holder) -> None:
        self._db = db  # the lease's own session: its connection holds the advisory lock
        self._holder = holder
        self._key = advisory_key("watch", db.workspace)
        self._session: psycopg.Connection[Any] | None = None  # the connection holding it
        self.description = db.description

    def try_acquire(self) -> bool:
        """Take the advisory lock, or (holding it) prove the session that holds it is alive."""
        try:
            conn = self._db._connection()
            if self._session is not conn:  # never held, or the session was lost since
                got = self._db._run("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
                self._session = conn if got and got[0] else None
            if self._session is None:
                return False
            self._db._run(
                f"INSERT INTO {LEASE_TABLE} (workspace, holder) VALUES (%s, %s) ON CONFLICT "
                "(workspace) DO UPDATE SET holder = EXCLUDED.holder, renewed_at = now()",
                (self._db.workspace, Jsonb(_backend.lease_record(self._holder))),
            )
            return True
        except StateError:
            self._drop()
            raise

    def holder(self) -> JsonObject | None:
        """Return the record the current leader wrote (None when no session holds the lock)."""
        try:
            if advisory_holder_pid(self._db._run, self._key) is None:
                return None
            row = self._db._run(
                f"SELECT holder FROM {LEASE_TABLE} WHERE workspace = %s", (self._db.workspace,)
            ).fetchone()
        except StateError:  # a standby's view only: an unreadable lease shows as unknown
            self._drop()
            return None
        if row is None:
            return None
        return row[0] if isinstance(row[0], dict) else dict(json.loads(row[0]))

    def release(self) -> None:
        """Unlock and close the session (closing alone would release the lock too)."""
        if self._session is not None and not self._session.closed:
            with contextlib.suppress(StateError):
                self._db._run("SELECT pg_advisory_unlock(%s)", (self._key,))
        self._drop()

    def _drop(self) -> None:
        self._session = None
        self._db.close()
