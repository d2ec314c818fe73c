"""Contract suite: every state backend (local file, PostgreSQL, S3-compatible) behaves the same —
round trip byte for byte, compare-and-set conflicts, the lock (held, timeout, holder message),
dead holders (local and PostgreSQL free at once; S3 reported, cleared by unlock), corrupt or
newer-format documents refused and left untouched, independent workspaces; and the watch
lease (taken, renewed, refused to a second holder, released, expired with a dead holder, its
holder described), apart from the state lock."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.model.errors import StateConflictError, StateError, StateLockedError
from reconciler.state.backend import (
    Backend,
    Holder,
    Lease,
    describe_holder,
    locked_state,
    read_state,
)
from reconciler.state.stores import open_backend
from tests.support.state_servers import Postgres, S3Server

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["local", "postgresql", "s3"]


class Store:
    """One backend's address and the environment its processes need."""

    def __init__(self, kind: str, address: str, env: dict[str, str]) -> None:
        self.kind = kind
        self.address = address
        self.env = env
        self.workspace = f"w{uuid.uuid4().hex[:10]}"
        self._open: list[Backend] = []
        self._leases: list[Lease] = []

    def open(self, workspace: str | None = None) -> Backend:
        """Open a fresh backend handle (closed at the end of the test)."""
        backend = open_backend(self.address, workspace or self.workspace)
        self._open.append(backend)
        return backend

    def lease(self, holder: Holder, seconds: float, workspace: str | None = None) -> Lease:
        """Return a watch lease on a fresh backend handle (released at the end of the test)."""
        lease = self.open(workspace).lease(holder, seconds)
        self._leases.append(lease)
        return lease

    def close(self) -> None:
        for lease in self._leases:
            lease.release()
        for backend in self._open:
            backend.release()
            backend.close()


@pytest.fixture(params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Store]:
    kind = request.param
    env: dict[str, str] = {}
    if kind == "local":
        address = str(tmp_path / "state.json")
    elif kind == "postgresql":
        server: Postgres = request.getfixturevalue("postgres_server")
        address = server.url
    else:
        s3: S3Server = request.getfixturevalue("s3_server")
        env = s3.env()
        address = f"s3://{s3.bucket}/{uuid.uuid4().hex[:8]}/state.json"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = Store(kind, address, env)
    try:
        yield result
    finally:
        result.close()


def test_a_new_state_reads_as_absent_and_round_trips_byte_for_byte(store: Store) -> None:
    backend = store.open()
    assert backend.read() == (None, None)
    with locked_state(backend) as state:
        assert not state.exists
        state.record("Pipe/orders", secrets={"source.kafka.credentials": "hmac-sha256:ab"})
        state.record("Dashboard/ops", id="d-1", contentHash="sha256:x", createdByUs=True)
        state.save()
        written = state.serialize().encode()
    data, version = store.open().read()
    assert data == written and version is not None
    again = read_state(store.open())
    assert again.exists and again.key == state.key
    assert again.serialize().encode() == written
    assert again.fingerprints("Pipe/orders") == {"source.kafka.credentials": "hmac-sha256:ab"}


def test_every_save_in_one_run_follows_the_previous_one(store: Store) -> None:
    with locked_state(store.open()) as state:
        for n in range(5):
            state.record(f"Pipe/p{n}", managed=["a"])
            state.save()
    assert sorted(read_state(store.open()).resources) == [f"Pipe/p{n}" for n in range(5)]


def test_a_write_based_on_an_outdated_read_is_refused_and_changes_nothing(store: Store) -> None:
    with locked_state(store.open()) as first:
        first.save()
    one, two = read_state(store.open()), read_state(store.open())
    one.record("Pipe/a", managed=["x"])
    one.save()
    stored = store.open().read()[0]
    two.record("Pipe/b", managed=["y"])
    with pytest.raises(StateConflictError, match="changed by another writer"):
        two.save()
    assert store.open().read()[0] == stored


def test_creating_a_state_that_appeared_meanwhile_is_a_conflict(store: Store) -> None:
    late, early = read_state(store.open()), read_state(store.open())
    early.save()
    with pytest.raises(StateConflictError):
        late.save()


def _holder_message_parts(message: str, holder: Holder) -> None:
    assert "is locked by" in message
    for part in (
        f"pid {holder.pid}",
        f"on {holder.host}",
        f"user {holder.user}",
        holder.command,
        holder.startedAt,
        holder.lockId,
        "--lock-timeout",
    ):
        assert part in message, (part, message)


def test_a_held_lock_names_its_holder_after_the_timeout(store: Store) -> None:
    first, second = store.open(), store.open()
    holder = Holder.current("reconcile apply")
    first.acquire(holder, 0)
    with pytest.raises(StateLockedError) as caught:
        second.acquire(Holder.current("reconcile plan"), 0.3)
    _holder_message_parts(str(caught.value), holder)
    assert "after waiting 0.3s" in str(caught.value)
    assert caught.value.holder and caught.value.holder["lockId"] == holder.lockId
    first.release()
    second.acquire(Holder.current(), 0)
    second.release()


def test_a_waiting_run_gets_the_lock_when_the_holder_releases_it(store: Store) -> None:
    first, second = store.open(), store.open()
    first.acquire(Holder.current(), 0)
    timer = threading.Timer(0.5, first.release)
    timer.start()
    try:
        second.acquire(Holder.current(), 30)
    finally:
        timer.join()
    second.release()


def test_workspaces_are_independent(store: Store) -> None:
    one, two = store.open("alpha" + store.workspace), store.open("beta" + store.workspace)
    one.acquire(Holder.current(), 0)
    two.acquire(Holder.current(), 0)  # not blocked by the other workspace's lock
    one.release()
    two.release()
    with locked_state(store.open("alpha" + store.workspace)) as alpha:
        alpha.record("Pipe/a", managed=["x"])
        alpha.save()
    assert read_state(store.open("beta" + store.workspace)).exists is False


HOLDER = textwrap.dedent(
    """
    import sys, time
    from reconciler.state.backend import Holder
    from reconciler.state.stores import open_backend
    backend = open_backend(sys.argv[1], sys.argv[2])
    holder = Holder.current("reconcile apply")
    backend.acquire(holder, 0)
    print(holder.lockId, flush=True)
    time.sleep(120)
    """
)


def _killed_holder(store: Store) -> str:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store.address, store.workspace],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **store.env},
    )
    assert process.stdout is not None
    lock_id = process.stdout.readline().strip()
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    assert lock_id
    return lock_id


def test_a_killed_holder_never_blocks_local_and_postgresql_and_is_reported_on_s3(
    store: Store,
) -> None:
    lock_id = _killed_holder(store)
    backend = store.open()
    if store.kind in ("local", "postgresql"):
        # The OS (flock) or the server (session advisory lock) released it with the process.
        backend.acquire(Holder.current(), 0)
        backend.release()
        return
    with pytest.raises(StateLockedError) as caught:
        backend.acquire(Holder.current(), 0)
    message = str(caught.value)
    assert lock_id in message and "ago" in message
    assert f"reconcile state unlock {lock_id}" in message
    with pytest.raises(StateError, match="no lock with ID"):
        backend.unlock("not-" + lock_id)
    assert lock_id in backend.unlock(lock_id)
    backend.acquire(Holder.current(), 0)
    backend.release()


def test_unlock_of_a_live_lock_is_refused_on_local_and_postgresql_obeyed_on_s3(
    store: Store,
) -> None:
    first = store.open()
    holder = Holder.current()
    first.acquire(holder, 0)
    if store.kind == "s3":
        # An S3 lock cannot tell a live holder from a dead one: unlock removes it as asked.
        assert holder.lockId in store.open().unlock(holder.lockId)
        return
    with pytest.raises(StateError, match="held by a live"):
        store.open().unlock(holder.lockId)


BAD_DOCUMENTS: dict[str, tuple[bytes, str]] = {
    "corrupt": (b"{truncated", "unreadable or corrupt"),
    "newer-format": (
        json.dumps({"formatVersion": 99, "key": "00" * 32, "resources": {}}).encode(),
        "newer than this reconcile understands",
    ),
}


@pytest.mark.parametrize("bad", sorted(BAD_DOCUMENTS))
def test_a_corrupt_or_newer_document_is_refused_and_left_untouched(store: Store, bad: str) -> None:
    content, message = BAD_DOCUMENTS[bad]
    store.open().write(content, None)
    with pytest.raises(StateError, match=message):
        read_state(store.open())
    with pytest.raises(StateError, match=message), locked_state(store.open()):
        pass
    assert store.open().read()[0] == content
    # The refusing run released its lock.
    backend = store.open()
    backend.acquire(Holder.current(), 0)
    backend.release()


def test_the_postgresql_address_printed_never_holds_a_password(postgres_server: Postgres) -> None:
    secret_url = postgres_server.url.replace("reconcile@", "reconcile:hunter2-SECRET@")
    backend = open_backend(secret_url + "?password=other-SECRET", "default")
    assert "SECRET" not in backend.description
    assert "reconcile@127.0.0.1" in backend.description


def test_a_waiting_run_names_a_postgresql_holder_whose_record_is_written_just_after_its_lock(
    postgres_server: Postgres,
) -> None:
    # The holder takes the advisory lock first and writes its record a moment later; a run that
    # gives up in between must wait for that record instead of printing an anonymous holder.
    first = open_backend(postgres_server.url, f"w{uuid.uuid4().hex[:10]}")
    second = open_backend(postgres_server.url, first.workspace)  # type: ignore[attr-defined]
    holder = Holder.current("reconcile apply")
    try:
        first._run("SELECT pg_advisory_lock(%s)", (first._key,))  # type: ignore[attr-defined]
        late = threading.Timer(0.5, first.acquire, args=(holder, 0))
        late.start()
        with pytest.raises(StateLockedError) as caught:
            second.acquire(Holder.current("reconcile plan"), 0)
        late.join()
        _holder_message_parts(str(caught.value), holder)
    finally:
        first.close()
        second.close()


def test_a_waiting_run_names_a_local_holder_whose_record_is_written_just_after_its_lock(
    tmp_path: Path,
) -> None:
    first = open_backend(str(tmp_path / "state.json"), "default")
    second = open_backend(str(tmp_path / "state.json"), "default")
    holder = Holder.current("reconcile apply")
    try:
        first.acquire(holder, 0)
        record_path = first._holder_path  # type: ignore[attr-defined]
        written = record_path.read_text(encoding="utf-8")
        record_path.unlink()  # the moment between taking the lock and writing the record
        late = threading.Timer(0.5, record_path.write_text, args=(written,))
        late.start()
        with pytest.raises(StateLockedError) as caught:
            second.acquire(Holder.current("reconcile plan"), 0)
        late.join()
        _holder_message_parts(str(caught.value), holder)
    finally:
        first.release()
        first.close()
        second.close()


# -- the watch lease: one leader per state and workspace, on every backend ------------------


def _lease_record_parts(record: dict[str, object] | None, holder: Holder) -> None:
    assert record is not None
    assert (record["lockId"], record["pid"], record["host"], record["user"]) == (
        holder.lockId,
        holder.pid,
        holder.host,
        holder.user,
    )
    assert "command" not in record  # an option value on a command line could be a secret
    assert describe_holder(record) == f"pid {holder.pid} on {holder.host} (user {holder.user})"


def test_a_lease_is_taken_renewed_and_names_its_holder(store: Store) -> None:
    holder = Holder.current("reconcile watch")
    lease = store.lease(holder, 30)
    try:
        assert lease.try_acquire()
        assert lease.try_acquire()  # renewed by its holder
        _lease_record_parts(store.lease(Holder.current(), 30).holder(), holder)
        # A second watch on a file on this machine must refuse; on a shared store it stands by.
        assert lease.exclusive is (store.kind == "local")
        assert store.workspace in lease.description or store.kind == "local"
    finally:
        lease.release()


def test_a_second_holder_is_refused_and_sees_the_first(store: Store) -> None:
    first_holder = Holder.current("reconcile watch")
    first = store.lease(first_holder, 30)
    second = store.lease(Holder.current("reconcile watch"), 30)
    try:
        assert first.try_acquire()
        assert not second.try_acquire()
        assert not second.try_acquire()
        _lease_record_parts(second.holder(), first_holder)
    finally:
        first.release()
        second.release()


def test_a_released_lease_is_free_and_taken_at_once_by_another_holder(store: Store) -> None:
    first = store.lease(Holder.current(), 30)
    second_holder = Holder.current()
    second = store.lease(second_holder, 30)
    try:
        assert first.try_acquire()
        first.release()
        assert second.holder() is None
        assert second.try_acquire()
        _lease_record_parts(first.holder(), second_holder)
        assert not first.try_acquire()
    finally:
        first.release()
        second.release()


def test_a_renewed_lease_outlives_its_period(store: Store) -> None:
    holder = Holder.current()
    lease = store.lease(holder, 1.0)
    other = store.lease(Holder.current(), 1.0)
    try:
        assert lease.try_acquire()
        for _ in range(8):  # two periods, renewed every quarter of one
            time.sleep(0.25)
            assert lease.try_acquire()
            assert not other.try_acquire()
        _lease_record_parts(other.holder(), holder)
    finally:
        lease.release()
        other.release()


def test_the_lease_is_apart_from_the_state_lock_and_from_other_workspaces(store: Store) -> None:
    locked = store.open()
    locked.acquire(Holder.current("reconcile apply"), 0)  # an apply holds the state lock
    lease = store.lease(Holder.current(), 30)
    elsewhere = store.lease(Holder.current(), 30, "other" + store.workspace)
    try:
        assert lease.try_acquire()
        assert elsewhere.try_acquire()
        locked.release()
        store.open().acquire(Holder.current("reconcile apply"), 0)  # and the lease never blocks it
    finally:
        lease.release()
        elsewhere.release()


def test_a_lease_outlives_closing_the_backend_it_came_from(store: Store) -> None:
    backend = store.open()
    lease = backend.lease(Holder.current(), 30)
    backend.close()  # as the command does once it has the lease and the state's description
    try:
        assert lease.try_acquire()
        assert not store.lease(Holder.current(), 30).try_acquire()
    finally:
        lease.release()


LEASE_HOLDER = textwrap.dedent(
    """
    import sys, time
    from reconciler.state.backend import Holder
    from reconciler.state.stores import open_backend
    holder = Holder.current("reconcile watch")
    lease = open_backend(sys.argv[1], sys.argv[2]).lease(holder, float(sys.argv[3]))
    assert lease.try_acquire()
    print(holder.lockId, flush=True)
    for _ in range(480):  # renewed as a leading watch renews it, until killed
        time.sleep(float(sys.argv[3]) / 4)
        assert lease.try_acquire()
    """
)


def test_the_lease_of_a_killed_holder_expires_within_its_period(store: Store) -> None:
    seconds = 1.0
    process = subprocess.Popen(
        [sys.executable, "-c", LEASE_HOLDER, store.address, store.workspace, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **store.env},
    )
    assert process.stdout is not None
    lease = store.lease(Holder.current(), 30)
    try:
        lock_id = process.stdout.readline().strip()
        assert lock_id
        assert not lease.try_acquire()  # held while its holder lives
        holder = lease.holder()
        assert holder is not None and holder["lockId"] == lock_id
        process.send_signal(signal.SIGKILL)
        process.wait()
        # Freed with the process (file lock, database session) or once its period ran out (S3).
        deadline = time.monotonic() + seconds + 20
        while not lease.try_acquire():
            assert time.monotonic() < deadline, "the dead holder's lease never expired"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        lease.release()


def test_a_lease_on_an_unreachable_database_is_a_state_error_without_the_password() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://reconcile:hunter2-SECRET@127.0.0.1:{port}/reconcile"
    lease = open_backend(url, "default").lease(Holder.current(), 30)
    with pytest.raises(StateError) as caught:
        lease.try_acquire()
    assert "SECRET" not in str(caught.value) and f"127.0.0.1:{port}" in str(caught.value)
    assert lease.holder() is None
    lease.release()
