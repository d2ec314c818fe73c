"""The emulator as a real server on loopback: start-up lines, auth, admin log, drops, CLI options."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from reconciler.emulator.faults import FaultInjector
from tests.support.cli import run_cli
from tests.support.emulator import Emulator, start_emulator, stop_emulator
from tests.support.seed_ids import SEED

pytestmark = pytest.mark.integration

PIPE_PATH = f"/v1/organizations/{SEED.org_id}/services/{SEED.analytics}/pipes/{SEED.kafka_pipe}"


def _first_fault_is_drop_seed() -> int:
    for seed in range(1000):
        if FaultInjector(1.0, seed).decide() == "drop":
            return seed
    raise AssertionError("no seed starts with a drop")


def test_startup_lines_should_name_both_interfaces_and_the_demo_credentials(
    emulator: Emulator,
) -> None:
    management, dashboards = emulator.startup_lines
    assert re.fullmatch(
        rf"management API: http://127\.0\.0\.1:\d+  organization={SEED.org_id}  "
        r"Basic demo-key-id:demo-key-secret",
        management,
    )
    assert re.fullmatch(
        r"dashboards API: http://127\.0\.0\.1:\d+  Bearer demo-dashboards-token", dashboards
    )
    assert emulator.url == management.split()[2]
    assert emulator.env()["RECONCILE_ORGANIZATION_ID"] == SEED.org_id


def test_server_should_answer_right_credentials_and_refuse_wrong_ones(emulator: Emulator) -> None:
    with httpx.Client(base_url=emulator.url, timeout=10) as http:
        good = http.get(PIPE_PATH, auth=(emulator.key_id, emulator.key_secret))
        assert good.status_code == 200 and good.json()["result"]["name"] == "orders"
        bad = http.get(PIPE_PATH, auth=(emulator.key_id, "wrong"))
        assert bad.status_code == 401 and bad.json()["error"].startswith("UNAUTHORIZED:")
        bearer = {"Authorization": f"Bearer {emulator.token}"}
        created = http.post("/api/v2/dashboards", headers=bearer, json={"name": "d"})
        assert created.status_code == 200 and created.json()["data"]["name"] == "d"
        basic = http.post(
            "/api/v2/dashboards", auth=(emulator.key_id, emulator.key_secret), json={}
        )
        assert (basic.status_code, basic.content) == (401, b"")


def test_admin_log_should_list_api_requests_and_reset_should_clear_everything(
    emulator: Emulator,
) -> None:
    with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as http:
        http.patch(PIPE_PATH, json={"name": "renamed"})
    log = emulator.requests()
    assert [(e["method"], e["path"], e["body"], e["status"]) for e in log] == [
        ("PATCH", PIPE_PATH, {"name": "renamed"}, 200)
    ]
    assert emulator.data()["pipes"][SEED.kafka_pipe]["name"] == "renamed"
    emulator.set_pipe_state(SEED.postgres_running_pipe, "Paused")
    assert emulator.data()["pipes"][SEED.postgres_running_pipe]["state"] == "Paused"
    emulator.reset()
    assert emulator.requests() == []
    assert emulator.data()["pipes"][SEED.kafka_pipe]["name"] == "orders"


def test_dropped_connection_should_be_a_transport_error_and_the_server_keeps_serving(
    emulator: Emulator,
) -> None:
    emulator.configure(faultRate=1.0, faultSeed=_first_fault_is_drop_seed())
    with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as http:
        with pytest.raises(httpx.TransportError):
            http.get(PIPE_PATH)
        emulator.configure(faultRate=0.0)
        assert http.get(PIPE_PATH).status_code == 200
    assert emulator.requests()[0]["fault"] in ("drop", "drop-after-apply")


def test_latency_should_delay_each_request(emulator: Emulator) -> None:
    emulator.configure(latencyMs=150)
    with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as http:
        started = time.monotonic()
        assert http.get(PIPE_PATH).status_code == 200
        assert time.monotonic() - started >= 0.15


def test_cli_options_should_configure_a_fresh_emulator(tmp_path: Path) -> None:
    data_file = tmp_path / "store.json"
    env = {
        "RECONCILE_KEY_ID": "k1",
        "RECONCILE_KEY_SECRET": "s1",
        "RECONCILE_DASHBOARDS_TOKEN": "t1",
    }
    args = ("--spec-only", "--seed-pipes", "8", "--services", "2", "--data", str(data_file))
    emulator = start_emulator(*args, "--rate-limit", "3/60", env=env)
    try:
        assert (emulator.key_id, emulator.key_secret, emulator.token) == ("k1", "s1", "t1")
        with httpx.Client(base_url=emulator.url, auth=("k1", "s1")) as http:
            assert http.get(f"/v1/organizations/{SEED.org_id}").status_code == 404  # spec-only
            assert http.patch(PIPE_PATH, json={"name": "kept"}).status_code == 200
            assert http.get(PIPE_PATH).status_code == 200
            limited = http.get(PIPE_PATH)
            assert limited.status_code == 429 and float(limited.headers["X-RateLimit-Reset"]) > 0
        assert len(emulator.data()["pipes"]) == 16
    finally:
        stop_emulator(emulator)
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the parent sees the signal.
    assert emulator.process is not None and emulator.process.returncode in (0, -15)
    restarted = start_emulator("--data", str(data_file), env=env)
    try:
        assert restarted.data()["pipes"][SEED.kafka_pipe]["name"] == "kept"
    finally:
        stop_emulator(restarted)


def test_data_in_a_directory_that_does_not_exist_yet_creates_it_and_persists(
    tmp_path: Path,
) -> None:
    # Acceptance finding: `--data missing/dir/store.json` failed with "cannot load" and the
    # name of a temporary file. A user expects what `--out` does: the directory is created.
    data_file = tmp_path / "new" / "dir" / "store.json"
    emulator = start_emulator("--data", str(data_file))
    try:
        with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as h:
            assert h.patch(PIPE_PATH, json={"name": "kept"}).status_code == 200
    finally:
        stop_emulator(emulator)
    assert json.loads(data_file.read_text())["pipes"][SEED.kafka_pipe]["name"] == "kept"
    assert [p.name for p in data_file.parent.iterdir()] == ["store.json"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "a-file/x/store.json",
            "Error: cannot create the directory of --data a-file/x/store.json: a-file is a file,",
        ),
        ("new-dir/", "Invalid value for '--data': new-dir/ names a directory; give a file"),
        ("a-dir", "Invalid value for '--data': File 'a-dir' is a directory."),
        ("bad.json", "Error: cannot load bad.json: not an emulator data file"),
        ("list.json", "Error: cannot load list.json: not an emulator data file"),
    ],
    ids=["parent-is-a-file", "trailing-slash", "existing-directory", "not-a-data-file", "a-list"],
)
def test_data_that_cannot_be_used_is_refused_with_a_message_naming_it(
    given: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "bad.json").write_text("{}")
    (tmp_path / "list.json").write_text("[]")
    result = run_cli(["emulator", "--port", "0", "--data", given], {})
    assert result.exit_code == 1
    assert expected in result.stderr
    assert ".emulator-" not in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a-dir",
        "a-file",
        "bad.json",
        "list.json",
    ]
    assert list((tmp_path / "a-dir").iterdir()) == []
