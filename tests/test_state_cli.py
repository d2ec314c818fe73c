"""`reconcile state` on every backend: list/show/rm/mv, pull and push byte for byte (lineage
refused unless --force), migrate local → PostgreSQL → S3 with verification, unlock by lock ID."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from reconciler.state.backend import Holder, locked_state
from reconciler.state.stores import open_backend
from tests.support.cli import run_cli
from tests.support.state_servers import Postgres, S3Server


@pytest.fixture
def stores(
    tmp_path: Path, postgres_server: Postgres, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return {
        "local": str(tmp_path / "state.json"),
        "postgresql": postgres_server.url,
        "s3": f"s3://{s3_server.bucket}/{uuid.uuid4().hex[:8]}/state.json",
    }


def _seed(address: str, workspace: str) -> bytes:
    with locked_state(open_backend(address, workspace)) as state:
        state.record("Pipe/orders", secrets={"source.kafka.credentials": "hmac-sha256:ab"})
        state.record("Dashboard/ops", id="d-1", contentHash="sha256:x", createdByUs=True)
        state.save()
        return state.serialize().encode()


def _env(workspace: str) -> dict[str, str]:
    return {"RECONCILE_WORKSPACE": workspace}


@pytest.mark.parametrize("kind", ["local", "postgresql", "s3"])
def test_list_show_rm_and_mv_edit_the_state_in_any_backend(
    stores: dict[str, str], kind: str
) -> None:
    ws = f"w{uuid.uuid4().hex[:8]}"
    address = stores[kind]
    _seed(address, ws)
    env = {"RECONCILE_STATE": address, **_env(ws)}
    listed = run_cli(["state", "list"], env)
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.splitlines() == ["Dashboard/ops", "Pipe/orders"]
    assert run_cli(["state", "list", "-o", "json"], env).json() == ["Dashboard/ops", "Pipe/orders"]
    shown = run_cli(["state", "show", "Dashboard/ops", "-o", "json"], env).json()
    assert shown["id"] == "d-1" and shown["createdByUs"] is True
    missing = run_cli(["state", "show", "Pipe/nope"], env)
    assert missing.exit_code == 1 and "has no Pipe/nope" in missing.stderr
    assert run_cli(["state", "mv", "Dashboard/ops", "Pipe/ops"], env).exit_code == 1
    moved = run_cli(["state", "mv", "Dashboard/ops", "Dashboard/overview"], env)
    assert moved.exit_code == 0 and "Moved Dashboard/ops to Dashboard/overview" in moved.stdout
    removed = run_cli(["state", "rm", "Pipe/orders"], env)
    assert removed.exit_code == 0, removed.output
    assert run_cli(["state", "list"], env).stdout.splitlines() == ["Dashboard/overview"]


def test_pull_and_push_round_trip_byte_for_byte_and_push_refuses_another_lineage(
    stores: dict[str, str], tmp_path: Path
) -> None:
    ws = f"w{uuid.uuid4().hex[:8]}"
    original = _seed(stores["postgresql"], ws)
    pulled = run_cli(["state", "pull", "--state", stores["postgresql"]], _env(ws))
    assert pulled.exit_code == 0 and pulled.stdout.encode() == original
    assert json.loads(pulled.stdout)["formatVersion"] == 1
    file = tmp_path / "pulled.json"
    file.write_bytes(original)
    pushed = run_cli(["state", "push", str(file), "--state", stores["s3"]], _env(ws))
    assert pushed.exit_code == 0, pushed.output
    assert open_backend(stores["s3"], ws).read()[0] == original
    again = run_cli(["state", "pull", "--state", stores["s3"]], _env(ws))
    assert again.stdout.encode() == original
    other = tmp_path / "other.json"
    other_ws = f"o{uuid.uuid4().hex[:8]}"
    _seed(stores["local"], other_ws)
    other.write_bytes(open_backend(stores["local"], other_ws).read()[0] or b"")
    refused = run_cli(["state", "push", str(other), "--state", stores["s3"]], _env(ws))
    assert refused.exit_code == 1 and "different state lineage" in refused.stderr
    assert open_backend(stores["s3"], ws).read()[0] == original
    forced = run_cli(["state", "push", str(other), "--force", "--state", stores["s3"]], _env(ws))
    assert forced.exit_code == 0
    assert open_backend(stores["s3"], ws).read()[0] == other.read_bytes()
    bad = tmp_path / "bad.json"
    bad.write_text('{"formatVersion": 99, "key": "00"}')
    assert run_cli(["state", "push", str(bad), "--state", stores["s3"]], _env(ws)).exit_code == 1


def test_migrate_copies_local_to_postgresql_to_s3_and_verifies(stores: dict[str, str]) -> None:
    ws = f"w{uuid.uuid4().hex[:8]}"
    original = _seed(stores["local"], ws)
    env = _env(ws)
    to_pg = run_cli(
        ["state", "migrate", "--state", stores["local"], "--to", stores["postgresql"]], env
    )
    assert to_pg.exit_code == 0, to_pg.output
    assert "verified" in to_pg.stdout
    to_s3 = run_cli(
        ["state", "migrate", "--state", stores["postgresql"], "--to", stores["s3"], "-o", "json"],
        env,
    )
    assert to_s3.exit_code == 0, to_s3.output
    assert to_s3.json()["copied"] is True and to_s3.json()["resources"] == 2
    assert open_backend(stores["s3"], ws).read()[0] == original
    assert open_backend(stores["postgresql"], ws).read()[0] == original
    assert Path(stores["local"]).with_name(f"state.{ws}.json").read_bytes() == original
    again = run_cli(["state", "migrate", "--state", stores["local"], "--to", stores["s3"]], env)
    assert again.exit_code == 0 and "nothing to copy" in again.stdout


def test_unlock_by_lock_id_clears_an_s3_lock_left_behind(stores: dict[str, str]) -> None:
    ws = f"w{uuid.uuid4().hex[:8]}"
    backend = open_backend(stores["s3"], ws)
    holder = Holder.current("reconcile apply")
    backend.acquire(holder, 0)  # never released: as if the run died
    env = {"RECONCILE_STATE": stores["s3"], **_env(ws)}
    blocked = run_cli(["state", "rm", "Pipe/x"], env)
    assert blocked.exit_code == 1
    assert f"reconcile state unlock {holder.lockId}" in blocked.stderr
    cleared = run_cli(["state", "unlock", holder.lockId], env)
    assert cleared.exit_code == 0 and holder.lockId in cleared.stdout
    assert run_cli(["state", "unlock", holder.lockId], env).exit_code == 1


def test_pushing_an_unreadable_file_names_that_file_and_leaves_the_state_untouched(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.json"
    before = _seed(str(state), "default")
    bad = tmp_path / "not-a-state.json"
    bad.write_text("{bad")
    result = run_cli(["state", "push", str(bad), "--state", str(state)], {})
    assert result.exit_code == 1
    assert f"{bad} (the file to push) is unreadable or corrupt" in result.stderr
    assert state.read_bytes() == before
