"""Leader election for ``watch``: one lease per state and workspace, held by one replica.

Only the holder plans and applies; the others stand by without touching the API. The lease
is separate from the state lock (which every apply, the watch's included, still takes for each
write), so a CI ``apply`` and the leader coordinate exactly as two applies do.

- PostgreSQL: a session advisory lock on its own key, held by a dedicated connection for as
  long as the replica leads. The server frees it the moment that connection ends (the process
  died, was SIGKILLed, or lost the network), so a standby that polls takes over at once. The
  holder's record is kept in ``reconcile_watch_leases`` for standbys to show.
- S3: the object ``KEY.watch-lease`` holding the holder record and its expiry, created with
  ``If-None-Match: *`` and renewed (or taken over once expired) with ``If-Match`` on the ETag
  read, so two replicas can never both win. Expiry is the writer's clock plus ``--lease``.
- A local state file: a ``filelock`` beside it, released by the OS when the holder dies; a
  second watch on the same state refuses to start, naming the holder.

Every call blocks (database and S3 drivers are synchronous): the loop runs them in a thread.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any, Protocol

from reconciler.model.errors import StateError
from reconciler.model.json import JsonMapping, JsonObject
from reconciler.state.backend import Holder, redact_address, workspace_name
from reconciler.state.local import read_record, write_record


class Lease(Protocol):
    """A renewable claim to lead one state/workspace."""

    description: str
    # False: a second replica may stand by (shared state); True: it must refuse to start.
    exclusive: bool

    def try_acquire(self) -> bool:
        """Take or renew the lease; return whether this replica holds it now."""
        ...

    def holder(self) -> JsonObject | None:
        """Return the current holder's record (None when unknown or free)."""
        ...

    def release(self) -> None:
        """Give the lease back (a standby may take it at once)."""
        ...


def open_lease(address: str, workspace: str, holder: Holder, seconds: float) -> Lease:
    """Return the lease for a ``--state`` address and workspace."""
    if address.startswith(("postgresql://", "postgres://")):
        return PostgresLease(address, workspace, holder)
    if address.startswith("s3://"):
        return S3Lease(address, workspace, holder, seconds)
    return LocalLease(Path(workspace_name(address, workspace)), holder)


def _record(holder: Holder, **extra: Any) -> dict[str, Any]:
    # Who leads, for people: never the command line's options (a value could be a secret).
    return {
        "lockId": holder.lockId,
        "user": holder.user,
        "host": holder.host,
        "pid": holder.pid,
        **extra,
    }


class PostgresLease:
    """A session advisory lock held by a connection of its own."""

    exclusive = False
    TABLE = "reconcile_watch_leases"

    def __init__(self, url: str, workspace: str, holder: Holder) -> None:
        self._url = url
        self.workspace = workspace
        self._holder = holder
        self.description = f"{redact_address(url)} (workspace {workspace})"
        from reconciler.state.postgres import advisory_key

        self._key = advisory_key("watch", workspace)
        self._conn: Any = None
        self._held = False

    def _connection(self) -> Any:
        import psycopg

        from reconciler.state.postgres import create_tables

        if self._conn is None or self._conn.closed:
            self._held = False
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            # Two replicas starting together would race on CREATE TABLE: serialised as the
            # state backend serialises its own tables.
            create_tables(
                conn,
                f"CREATE TABLE IF NOT EXISTS {self.TABLE} (workspace text PRIMARY KEY, "
                "holder jsonb NOT NULL, renewed_at timestamptz NOT NULL DEFAULT now())",
            )
            self._conn = conn
        return self._conn

    def try_acquire(self) -> bool:
        """Take the advisory lock (or check that this connection still holds it)."""
        import psycopg
        from psycopg.types.json import Jsonb

        try:
            conn = self._connection()
            if self._held:
                conn.execute("SELECT 1")  # the session is alive, so the lock is still ours
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
                self._held = bool(row and row[0])
            if self._held:
                conn.execute(
                    f"INSERT INTO {self.TABLE} (workspace, holder) VALUES (%s, %s) ON CONFLICT "
                    "(workspace) DO UPDATE SET holder = EXCLUDED.holder, renewed_at = now()",
                    (self.workspace, Jsonb(_record(self._holder))),
                )
            return self._held
        except psycopg.Error as exc:
            self._drop()
            from reconciler.state.postgres import error_text

            raise StateError(
                f"watch lease on {self.description}: {error_text(exc, self._url)}"
            ) from None

    def holder(self) -> JsonObject | None:
        """Return the record the current leader wrote (None when no session holds the lock)."""
        import psycopg

        from reconciler.state.postgres import advisory_holder_pid

        try:
            conn = self._connection()
            if advisory_holder_pid(conn.execute, self._key) is None:
                return None
            row = conn.execute(
                f"SELECT holder FROM {self.TABLE} WHERE workspace = %s", (self.workspace,)
            ).fetchone()
        except psycopg.Error:
            self._drop()
            return None
        if row is None:
            return None
        return row[0] if isinstance(row[0], dict) else dict(json.loads(row[0]))

    def release(self) -> None:
        """Unlock and close the connection (closing alone would release the lock too)."""
        import psycopg

        if self._conn is not None and not self._conn.closed and self._held:
            # Closing the session below releases it all the same.
            with contextlib.suppress(psycopg.Error):
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        self._drop()

    def _drop(self) -> None:
        self._held = False
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class S3Lease:
    """A lock object renewed with conditional writes; its holder and expiry are readable."""

    exclusive = False

    def __init__(self, address: str, workspace: str, holder: Holder, seconds: float) -> None:
        from reconciler.state.s3 import S3Backend

        self._backend = S3Backend(address, workspace)  # its client, bucket and key naming
        self.key = self._backend.key + ".watch-lease"
        self.description = f"s3://{self._backend.bucket}/{self.key}"
        self._holder = holder
        self.seconds = seconds

    def _read(self) -> tuple[dict[str, Any] | None, str | None]:
        from botocore.exceptions import ClientError

        try:
            got = self._backend._s3().get_object(Bucket=self._backend.bucket, Key=self.key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None, None
            raise
        try:
            record = json.loads(got["Body"].read())
        except ValueError:
            record = {}
        return (record if isinstance(record, dict) else {}), got["ETag"]

    def try_acquire(self) -> bool:
        """Create, renew or (once expired) take over the lease object."""
        from botocore.exceptions import BotoCoreError, ClientError

        now = time.time()
        try:
            record, etag = self._read()
            ours = record is not None and record.get("lockId") == self._holder.lockId
            if record is not None and not ours and float(record.get("expires", 0)) > now:
                return False
            body = json.dumps(
                _record(
                    self._holder,
                    expires=now + self.seconds,
                    expiresAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + self.seconds)),
                )
            ).encode()
            s3, bucket = self._backend._s3(), self._backend.bucket
            if etag:
                s3.put_object(Bucket=bucket, Key=self.key, Body=body, IfMatch=etag)
            else:
                s3.put_object(Bucket=bucket, Key=self.key, Body=body, IfNoneMatch="*")
            return True
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                return False  # another replica wrote first
            raise StateError(f"watch lease {self.description}: {exc}") from None
        except BotoCoreError as exc:
            raise StateError(f"watch lease {self.description}: {exc}") from None

    def holder(self) -> JsonObject | None:
        """Return the lease object's record while it has not expired."""
        try:
            record, _ = self._read()
        except Exception:  # a standby's view only: an unreadable lease shows as unknown
            return None
        if record is None or float(record.get("expires", 0)) <= time.time():
            return None
        return record

    def release(self) -> None:
        """Delete the lease object if it is still ours (matched on its ETag)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            record, etag = self._read()
            if record is not None and etag and record.get("lockId") == self._holder.lockId:
                self._backend._s3().delete_object(
                    Bucket=self._backend.bucket, Key=self.key, IfMatch=etag
                )
        except (ClientError, BotoCoreError, TypeError):
            pass  # expiry frees it within --lease all the same


class LocalLease:
    """A file lock beside a local state file, with the holder's record next to it."""

    exclusive = True

    def __init__(self, state: Path, holder: Holder) -> None:
        from filelock import FileLock

        self.path = state.with_name(state.name + ".watch.lock")
        self.record_path = state.with_name(state.name + ".watch.json")
        self.description = str(self.path)
        self._holder = holder
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.path))

    def try_acquire(self) -> bool:
        """Take the file lock without waiting (a no-op while held)."""
        from filelock import Timeout

        if self._lock.is_locked:
            return True
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        write_record(self.record_path, _record(self._holder))
        return True

    def holder(self) -> JsonObject | None:
        """Return the record the holder wrote."""
        return read_record(self.record_path)

    def release(self) -> None:
        """Remove the record and unlock."""
        if self._lock.is_locked:
            self.record_path.unlink(missing_ok=True)
            self._lock.release()


def describe_holder(record: JsonMapping | None) -> str:
    """Return a holder record for people: ``pid 123 on host (user)``."""
    if not record:
        return "an unknown process"
    return f"pid {record.get('pid')} on {record.get('host')} (user {record.get('user')})"
