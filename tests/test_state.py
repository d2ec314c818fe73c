"""The state file (``reconciler.state.local``): records, atomic save (no temp file left, old file
intact when writing fails, mode 0600), clean errors for corrupt or newer-format files that are
never overwritten, and the lock: a message naming the holder's pid, a dead holder never
blocking."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.model.errors import StateError
from reconciler.state.local import (
    STATE_FORMAT_VERSION,
    DashboardRecord,
    State,
    load_state,
    locked_state,
)

ROOT = Path(__file__).resolve().parent.parent


def test_load_state_of_a_missing_file_is_new_with_a_random_key(tmp_path: Path) -> None:
    one = load_state(tmp_path / "state.json")
    two = load_state(tmp_path / "state.json")
    assert (one.exists, one.resources, len(one.key)) == (False, {}, 32)
    assert one.key != two.key
    assert not (tmp_path / "state.json").exists()


def test_state_save_then_load_round_trips(tmp_path: Path) -> None:
    path = tmp_path / ".reconcile" / "state.json"
    state = load_state(path)
    state.record("Pipe/orders", secrets={"source.kafka.credentials": "hmac-sha256:ab"})
    state.record("Pipe/orders", secrets={"source.kafka.caCertificate": "hmac-sha256:cd"})
    state.record("Dashboard/ops", id="d-1", contentHash="sha256:x", createdByUs=True)
    state.save()
    loaded = load_state(path)
    assert loaded.exists
    assert loaded.key == state.key
    assert loaded.fingerprints("Pipe/orders") == {
        "source.kafka.credentials": "hmac-sha256:ab",
        "source.kafka.caCertificate": "hmac-sha256:cd",
    }
    assert loaded.dashboard("ops") == DashboardRecord("d-1", "sha256:x", True, False)
    assert loaded.dashboards() == {"ops": DashboardRecord("d-1", "sha256:x", True, False)}
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["formatVersion"] == STATE_FORMAT_VERSION
    assert doc["key"] == state.key.hex()
    assert "appliedAt" in doc["resources"]["Pipe/orders"]


def test_state_record_none_removes_a_key_and_forget_drops_the_entry(tmp_path: Path) -> None:
    state = load_state(tmp_path / "s.json")
    state.record("Dashboard/ops", id="d-1", uncertain=True)
    state.record("Dashboard/ops", uncertain=None)
    assert "uncertain" not in state.resources["Dashboard/ops"]
    assert state.dashboard("ops") == DashboardRecord("d-1", None, False, False)
    state.forget("Dashboard/ops")
    assert state.dashboard("ops") is None
    assert state.fingerprints("Pipe/absent") == {}


def test_state_organization_values_round_trip(tmp_path: Path) -> None:
    state = load_state(tmp_path / "s.json")
    assert state.organization_values("Organization/acme") is None
    state.record("Organization/acme", observed={"name": "Acme", "privateEndpoints": []})
    assert state.organization_values("Organization/acme") == {
        "name": "Acme",
        "privateEndpoints": [],
    }


def test_state_save_leaves_no_temp_file_and_is_private(tmp_path: Path) -> None:
    state = load_state(tmp_path / "state.json")
    state.record("Pipe/p", secrets={"a": "b"})
    state.save()
    state.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    assert stat.S_IMODE((tmp_path / "state.json").stat().st_mode) == 0o600


def test_state_save_failing_midway_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    state = load_state(path)
    state.record("Pipe/p", secrets={"a": "old"})
    state.save()
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("reconciler.state.local.os.replace", broken_replace)
    state.record("Pipe/p", secrets={"a": "new"})
    with pytest.raises(OSError, match="No space left"):
        state.save()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{truncated", "is unreadable or corrupt", id="corrupt-json"),
        pytest.param(b"\xff\xfe\x00", "is unreadable or corrupt", id="not-utf8"),
        pytest.param("[]", "is not a reconcile state file", id="json-array"),
        pytest.param('{"resources": {}}', "is not a reconcile state file", id="no-format-version"),
        pytest.param(
            json.dumps({"formatVersion": STATE_FORMAT_VERSION + 1, "key": "00" * 32}),
            f"has format {STATE_FORMAT_VERSION + 1}, newer than this reconcile understands",
            id="newer-format",
        ),
        pytest.param(
            json.dumps({"formatVersion": 1, "key": "zz", "resources": {}}),
            "is corrupt",
            id="key-not-hex",
        ),
        pytest.param(
            json.dumps({"formatVersion": 1, "key": "00" * 4, "resources": {}}),
            "is corrupt",
            id="key-too-short",
        ),
        pytest.param(json.dumps({"formatVersion": 1}), "is corrupt", id="no-key"),
        pytest.param(
            json.dumps({"formatVersion": 1, "key": "00" * 32, "resources": []}),
            "is corrupt",
            id="resources-not-an-object",
        ),
    ],
)
def test_load_state_refuses_a_bad_file_and_leaves_it_untouched(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "state.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(StateError, match=message):
        load_state(path)
    assert path.read_bytes() == before


def test_newer_state_format_error_says_to_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"formatVersion": 99, "key": "00" * 32}), encoding="utf-8")
    with pytest.raises(StateError, match="upgrade reconcile"):
        load_state(path)


def test_locked_state_yields_the_state_and_removes_its_holder_record(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with locked_state(path) as state:
        assert isinstance(state, State)
        holder = json.loads((tmp_path / "state.json.holder").read_text(encoding="utf-8"))
        assert holder["pid"] == os.getpid()
        assert "startedAt" in holder
    assert not (tmp_path / "state.json.holder").exists()
    with locked_state(path) as again:
        assert again.location == str(path)


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from reconciler.state.local import locked_state
    with locked_state(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(60)
    """
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "state.json")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "locked"
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()


def test_locked_state_held_elsewhere_names_the_holder_pid(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    with pytest.raises(StateError) as caught, locked_state(tmp_path / "state.json", timeout=0.2):
        pass
    message = str(caught.value)
    assert f"is locked by pid {holder.pid} on " in message
    assert "started " in message
    assert "after waiting 0.2s" in message
    assert "--lock-timeout" in message


def test_locked_state_of_a_killed_holder_is_free(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (tmp_path / "state.json.holder").exists()  # the dead holder never cleaned up
    with locked_state(tmp_path / "state.json", timeout=2) as state:
        assert not state.exists
        holder_doc = json.loads((tmp_path / "state.json.holder").read_text(encoding="utf-8"))
        assert holder_doc["pid"] == os.getpid()


@pytest.mark.parametrize(
    ("message", "url", "shown"),
    [
        ("auth failed for s3cr3t\nDETAIL", "postgresql://u:s3cr3t@db/x", "auth failed for ***"),
        ("connection refused", "postgresql://u@db/x", "connection refused"),
        ("", "postgresql://db/x", "OperationalError"),
    ],
)
def test_driver_errors_show_their_first_line_with_the_password_masked(
    message: str, url: str, shown: str
) -> None:
    import psycopg

    from reconciler.state.postgres import error_text

    assert error_text(psycopg.OperationalError(message), url) == shown
