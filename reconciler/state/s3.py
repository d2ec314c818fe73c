"""The S3-compatible backend: the document as one object, the lock as another.

Address: ``s3://BUCKET/KEY``. Credentials, region and endpoint come from the standard AWS
variables and files (``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, ``AWS_REGION``,
``AWS_ENDPOINT_URL``/``AWS_ENDPOINT_URL_S3``, ``~/.aws/config``…), so any S3-compatible store
works. boto3 is the driver: it reads all of those the standard way, retries throttling, and
sends the conditional-write headers this backend relies on.

The state object is written with ``If-Match: <ETag read>`` (``If-None-Match: *`` when new): a
writer whose ETag is out of date gets 412 and writes nothing. The lock is ``KEY.lock``, created
with ``If-None-Match: *`` and holding the holder record. Nothing can release a lock for a dead
runner here, so a lock left behind is reported with its holder and age and removed only by
``reconcile state unlock LOCK_ID`` (never automatically). The watch lease (``S3Lease``) is a
third object, ``KEY.watch-lease``, which expires unless its holder renews it.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

from reconciler.model.errors import ConfigError, StateConflictError, StateError, StateLockedError
from reconciler.model.json import JsonObject
from reconciler.state import backend as _backend
from reconciler.state.backend import Holder, Version, holder_age, workspace_name

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__: list[str] = []


# The answers of a conditional write that lost to another writer.
_CONFLICT = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")


def parse_address(address: str, origin: str | None = None) -> tuple[str, str]:
    """Split ``s3://BUCKET/KEY`` into bucket and key (``origin``: where it came from)."""
    rest = address[len("s3://") :]
    bucket, _, key = rest.partition("/")
    if not bucket or not key or key.endswith("/"):
        raise ConfigError(
            f"{origin or '--state'} {address}: give s3://BUCKET/KEY (an object key, e.g. "
            "state.json)"
        )
    return bucket, key


class S3Backend:
    """One workspace's state as an object in an S3-compatible bucket."""

    remote = True

    def __init__(self, address: str, workspace: str, origin: str | None = None) -> None:
        self._opened = (address, workspace, origin)  # what ``lease`` opens again
        self.bucket, base = parse_address(address, origin)
        self.key = workspace_name(base, workspace)
        self.lock_key = self.key + ".lock"
        self.description = f"s3://{self.bucket}/{self.key}"
        self._client: S3Client | None = None
        self._holder: Holder | None = None

    def _s3(self) -> S3Client:
        if self._client is None:
            import boto3
            from botocore.config import Config

            session = boto3.session.Session()
            self._client = session.client(
                "s3",
                region_name=session.region_name or "us-east-1",
                config=Config(retries={"mode": "standard", "max_attempts": 5}),
            )
        return self._client

    def _fail(self, exc: Exception, what: str) -> StateError:
        return StateError(f"state {self.description}: {what} failed: {_describe(exc)}")

    # -- document ------------------------------------------------------------------------------

    def read(self) -> tuple[bytes | None, Version]:
        """Return the object's bytes and ETag (None, None when it does not exist)."""
        return self._get(self.key)

    def _get(self, key: str) -> tuple[bytes | None, str | None]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._s3().get_object(Bucket=self.bucket, Key=key)
            return response["Body"].read(), response["ETag"]
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None, None
            raise self._fail(exc, f"reading {key}") from None
        except BotoCoreError as exc:
            raise self._fail(exc, f"reading {key}") from None

    def write(self, data: bytes, expected: Version) -> Version:
        """Put the object on condition of the ETag read (or of its absence); return the new ETag."""
        from botocore.exceptions import BotoCoreError, ClientError

        condition = {"IfMatch": expected} if expected else {"IfNoneMatch": "*"}
        try:
            response = self._s3().put_object(
                Bucket=self.bucket,
                Key=self.key,
                Body=data,
                ContentType="application/json",
                **condition,
            )
        except ClientError as exc:
            if _code(exc) in _CONFLICT:
                raise StateConflictError(self.description) from None
            if expected and _code(exc) in ("NoSuchKey", "404"):
                raise StateConflictError(self.description) from None  # deleted meanwhile
            raise self._fail(exc, "writing the state") from None
        except BotoCoreError as exc:
            raise self._fail(exc, "writing the state") from None
        return response["ETag"]

    # -- lock ----------------------------------------------------------------------------------

    def acquire(self, holder: Holder, timeout: float) -> None:
        """Create the lock object (``If-None-Match: *``), polling until ``timeout``."""
        from botocore.exceptions import BotoCoreError, ClientError

        body = json.dumps(holder.to_dict()).encode("utf-8")
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._s3().put_object(
                    Bucket=self.bucket,
                    Key=self.lock_key,
                    Body=body,
                    ContentType="application/json",
                    IfNoneMatch="*",
                )
                self._holder = holder
                return
            except ClientError as exc:
                if _code(exc) not in _CONFLICT:
                    raise self._fail(exc, "creating the lock object") from None
            except BotoCoreError as exc:
                raise self._fail(exc, "creating the lock object") from None
            if time.monotonic() >= deadline:
                record = self._lock_record()
                raise StateLockedError(
                    self.description,
                    record,
                    waited=timeout,
                    age=holder_age(record),
                    stale_hint=True,
                )
            time.sleep(min(_backend.POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    def _record(self, key: str) -> tuple[dict[str, Any] | None, str | None]:
        """Return a lock object's holder record (None when absent or unreadable) and its ETag."""
        data, etag = self._get(key)
        try:
            record = json.loads(data) if data is not None else None
        except ValueError:
            record = None
        return (record if isinstance(record, dict) else None), etag

    def _lock_record(self) -> dict[str, Any] | None:
        return self._record(self.lock_key)[0]

    def _delete_lock(self, lock_id: str, key: str | None = None) -> bool:
        """Delete the lock object ``key`` (the state lock's by default) if ``lock_id`` holds it."""
        from botocore.exceptions import BotoCoreError, ClientError

        key = key or self.lock_key
        record, etag = self._record(key)
        if record is None or record.get("lockId") != lock_id or etag is None:
            return False
        try:
            # If-Match: never delete a lock object another run created after the read above.
            self._s3().delete_object(Bucket=self.bucket, Key=key, IfMatch=etag)
        except ClientError as exc:
            if _code(exc) in ("PreconditionFailed", "412", "NoSuchKey", "404"):
                return False
            raise self._fail(exc, f"deleting {key}") from None
        except BotoCoreError as exc:
            raise self._fail(exc, f"deleting {key}") from None
        return True

    def release(self) -> None:
        """Delete the lock object if it is still ours."""
        if self._holder is None:
            return
        holder, self._holder = self._holder, None
        self._delete_lock(holder.lockId)

    def unlock(self, lock_id: str) -> str:
        """Delete the lock object named by ``lock_id`` (left by a dead run)."""
        record = self._lock_record()
        if record is None or record.get("lockId") != lock_id:
            raise StateError(f"state {self.description} has no lock with ID {lock_id}")
        if not self._delete_lock(lock_id):
            raise StateError(f"lock {lock_id} on {self.description} changed while removing it")
        return (
            f"Removed lock {lock_id} (held by pid {record.get('pid')} on {record.get('host')}, "
            f"started {record.get('startedAt')})."
        )

    def close(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def lease(self, holder: Holder, seconds: float) -> S3Lease:
        """Return the watch lease of this workspace (the object ``KEY.watch-lease``)."""
        return S3Lease(S3Backend(*self._opened), holder, seconds)


class S3Lease:
    """The watch lease: an object renewed with conditional writes, its holder and expiry readable.

    ``KEY.watch-lease`` holds the holder's record and its expiry (the writer's clock plus
    ``seconds``); it is created with ``If-None-Match: *`` and renewed, or taken over once
    expired, with ``If-Match`` on the ETag read, so two replicas can never both win. Nothing
    ends it when its holder dies: it expires ``seconds`` after the last renewal.
    """

    exclusive = False

    def __init__(self, store: S3Backend, holder: Holder, seconds: float) -> None:
        self._store = store  # its client, bucket and error messages: a handle of its own
        self.key = store.key + ".watch-lease"
        self.description = f"s3://{store.bucket}/{self.key}"
        self._holder = holder
        self.seconds = seconds

    def try_acquire(self) -> bool:
        """Create, renew or (once expired) take over the lease object."""
        from botocore.exceptions import BotoCoreError, ClientError

        now = time.time()
        record, etag = self._store._record(self.key)
        if etag is not None and not self._ours(record) and _unexpired(record, now):
            return False
        expires = now + self.seconds
        body = _backend.lease_record(
            self._holder,
            expires=expires,
            expiresAt=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)),
        )
        s3, bucket, data = self._store._s3(), self._store.bucket, json.dumps(body).encode()
        try:
            if etag:  # renewed, or taken over once expired: only if nobody wrote since the read
                s3.put_object(Bucket=bucket, Key=self.key, Body=data, IfMatch=etag)
            else:
                s3.put_object(Bucket=bucket, Key=self.key, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if _code(exc) in _CONFLICT:
                return False  # another replica wrote first
            raise self._store._fail(exc, "writing the watch lease") from None
        except BotoCoreError as exc:
            raise self._store._fail(exc, "writing the watch lease") from None
        return True

    def _ours(self, record: dict[str, Any] | None) -> bool:
        return record is not None and record.get("lockId") == self._holder.lockId

    def holder(self) -> JsonObject | None:
        """Return the lease object's record while it has not expired."""
        try:
            record, _ = self._store._record(self.key)
        except StateError:  # a standby's view only: an unreadable lease shows as unknown
            return None
        return record if _unexpired(record, time.time()) else None

    def release(self) -> None:
        """Delete the lease object if it is still ours (matched on its ETag)."""
        # Expiry frees it within ``seconds`` all the same when this fails.
        with contextlib.suppress(StateError):
            self._store._delete_lock(self._holder.lockId, self.key)
        self._store.close()


def _unexpired(record: dict[str, Any] | None, now: float) -> bool:
    """Tell whether a lease record is still in force at ``now``."""
    if record is None:
        return False
    try:
        return float(record.get("expires", 0)) > now
    except (TypeError, ValueError):
        return False


def _code(exc: Any) -> str:
    error = getattr(exc, "response", {}).get("Error", {})
    return str(error.get("Code", ""))


def _describe(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        meta = response.get("ResponseMetadata", {})
        status = meta.get("HTTPStatusCode")
        rid = meta.get("RequestId")
        text = f"HTTP {status} {error.get('Code', '')}: {error.get('Message', '')}".strip()
        return text + (f" (requestId {rid})" if rid else "")
    return str(exc)
