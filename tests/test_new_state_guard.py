"""The new-state guard: with a state never written in its backend and a server that cannot list
dashboards, apply refuses to create a dashboard (nothing sent) unless --new-state, and plan warns."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli, write_manifest, writes
from tests.support.emulator import Emulator

DASHBOARD = {"name": "Pipes overview", "tiles": [], "tags": []}


def _manifests(tmp_path: Path) -> Path:
    root = tmp_path / "m"
    write_manifest(root / "ops.yaml", "Dashboard", "ops", DASHBOARD)
    return root


def test_apply_on_a_new_state_refuses_to_create_an_unlistable_dashboard_and_sends_nothing(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root, state = _manifests(tmp_path), tmp_path / "state.json"
    result = run_cli(["apply", str(root), "--auto-approve", "--state", str(state)], emulator.env())
    assert result.exit_code == 1
    assert "refusing to create Dashboard/ops" in result.stderr
    assert "--new-state" in result.stderr and "nothing was sent" in result.stderr
    assert writes(emulator.requests()) == []
    assert not state.exists()


def test_plan_on_a_new_state_warns_that_apply_will_refuse(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root = _manifests(tmp_path)
    result = run_cli(["plan", str(root), "--state", str(tmp_path / "s.json")], emulator.env())
    assert result.exit_code == 0
    assert "apply will refuse to create Dashboard/ops" in result.stdout
    confirmed = run_cli(
        ["plan", str(root), "--state", str(tmp_path / "s.json"), "--new-state"], emulator.env()
    )
    assert "refuse" not in confirmed.stdout


def test_new_state_confirms_the_first_run_and_later_runs_need_nothing(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root, state = _manifests(tmp_path), tmp_path / "state.json"
    args = ["apply", str(root), "--auto-approve", "--state", str(state)]
    assert run_cli([*args, "--new-state"], emulator.env()).exit_code == 0
    assert run_cli(args, emulator.env()).exit_code == 0
    assert len(writes(emulator.requests())) == 1


def test_a_server_that_lists_dashboards_needs_no_confirmation(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = _manifests(tmp_path), tmp_path / "state.json"
    result = run_cli(["apply", str(root), "--auto-approve", "--state", str(state)], emulator.env())
    assert result.exit_code == 0, result.output


def test_plan_out_on_a_new_state_refuses_to_save_a_plan_that_would_create_twice(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root, state, out = _manifests(tmp_path), tmp_path / "state.json", tmp_path / "plan.json"
    args = ["plan", str(root), "--state", str(state), "--out", str(out)]
    refused = run_cli(args, emulator.env())
    assert refused.exit_code == 1 and "--new-state" in refused.stderr
    assert not out.exists() and not state.exists()
    assert run_cli([*args, "--new-state"], emulator.env()).exit_code == 0
    applied = run_cli(
        ["apply", "--plan", str(out), "--auto-approve", "--state", str(state)], emulator.env()
    )
    assert applied.exit_code == 0, applied.output
