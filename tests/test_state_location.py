"""The default state location: one per project, whichever subset of manifests a command names."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.state import local
from tests.support.cli import pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator

KAFKA_SECRETS = {
    "kafka": {
        "credentials": {
            "username": {"fromEnv": "KAFKA_USER"},
            "password": {"fromEnv": "KAFKA_PASSWORD"},
        }
    }
}


def test_default_state_path_is_the_same_for_a_directory_and_a_file_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    manifest = write_manifest(tmp_path / "manifests" / "pipes" / "orders.yaml", "Pipe", "o", {})
    monkeypatch.chdir(tmp_path)
    whole = local.default_state_path(["manifests"])
    narrow = local.default_state_path([str(manifest.relative_to(tmp_path))])
    assert whole == narrow == tmp_path / ".reconcile" / "state.json"


def test_project_root_is_found_upwards_from_a_subdirectory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".reconcile").mkdir()
    deep = tmp_path / "manifests" / "pipes"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert local.find_project_root() == tmp_path
    assert local.default_state_path(["."]) == tmp_path / ".reconcile" / "state.json"


def test_project_file_marks_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reconcile.yaml").write_text("{}\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert local.find_project_root() == tmp_path


def test_legacy_state_beside_the_manifests_is_still_used_with_a_deprecation_line(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    write_manifest(tmp_path / "manifests" / "orders.yaml", "Pipe", "orders", pipe_spec())
    legacy = tmp_path / "manifests" / ".reconcile" / "state.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('{"formatVersion": 1, "key": "' + "ab" * 32 + '", "resources": {}}\n')
    monkeypatch.chdir(tmp_path)
    result = run_cli(["plan", "manifests"], emulator.env())
    assert result.exit_code == 0, result.output
    assert "deprecated" in result.stderr and str(Path("manifests/.reconcile/state.json")) in (
        result.stderr
    )


def test_narrower_plan_after_apply_shows_no_secret_change(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    write_manifest(
        tmp_path / "manifests" / "pipes" / "orders.yaml",
        "Pipe",
        "orders",
        pipe_spec(source=KAFKA_SECRETS),
    )
    monkeypatch.chdir(tmp_path)
    applied = run_cli(["apply", "manifests", "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    narrow = run_cli(["plan", "manifests/pipes/orders.yaml", "--detailed-exitcode"], emulator.env())
    assert narrow.exit_code == 0, narrow.output
    assert "No changes" in narrow.stdout
    assert (tmp_path / ".reconcile" / "state.json").exists()
