"""`apply --plan FILE --target …` applies only the saved plan's matching actions (documented
choice); a target matching none of them, or plan-shaping flags given with --plan, are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cli import pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, OBJECT_STORAGE_PIPE


def _saved_plan(emulator: Emulator, tmp_path: Path) -> tuple[Path, Path, Path]:
    root, state, saved = tmp_path / "m", tmp_path / "state.json", tmp_path / "p.plan"
    write_manifest(
        root / "a.yaml",
        "Pipe",
        "a",
        pipe_spec(KAFKA_PIPE, ANALYTICS, settings={"engine_max_threads": 9}),
    )
    write_manifest(
        root / "b.yaml",
        "Pipe",
        "b",
        pipe_spec(OBJECT_STORAGE_PIPE, ANALYTICS, settings={"engine_max_threads": 9}),
    )
    made = run_cli(["plan", str(root), "--out", str(saved), "--state", str(state)], emulator.env())
    assert made.exit_code == 0, made.output
    return root, state, saved


def _apply_saved(emulator: Emulator, saved: Path, state: Path, *extra: str) -> Any:
    """Run `apply --plan SAVED --auto-approve` with ``extra`` flags."""
    args = ["apply", "--plan", str(saved), "--auto-approve", "--state", str(state), *extra]
    return run_cli(args, emulator.env())


def test_apply_plan_with_target_applies_only_the_matching_actions(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state, saved = _saved_plan(emulator, tmp_path)
    result = _apply_saved(emulator, saved, state, "--target", "pipe/a")
    assert result.exit_code == 0, result.output
    sent = writes(emulator.requests())
    assert [w["path"].rsplit("/", 1)[-1] for w in sent] == [KAFKA_PIPE]
    assert "pipe b" not in result.stdout
    rest = run_cli(
        ["plan", str(root), "--state", str(state), "--detailed-exitcode"], emulator.env()
    )
    assert rest.exit_code == 2 and "~ pipe b" in rest.stdout and "~ pipe a" not in rest.stdout


def test_apply_plan_with_a_target_matching_no_action_is_refused(
    emulator: Emulator, tmp_path: Path
) -> None:
    _, state, saved = _saved_plan(emulator, tmp_path)
    result = _apply_saved(emulator, saved, state, "--target", "pipe/zzz")
    assert result.exit_code == 1
    assert "--target pipe/zzz matches no action of the saved plan" in result.stderr
    assert writes(emulator.requests()) == []


def test_apply_plan_refuses_prune_and_replace(emulator: Emulator, tmp_path: Path) -> None:
    _, state, saved = _saved_plan(emulator, tmp_path)
    result = run_cli(
        ["apply", "--plan", str(saved), "--prune", "--auto-approve", "--state", str(state)],
        emulator.env(),
    )
    assert result.exit_code == 1
    assert "--prune" in result.stderr and "plan --out" in result.stderr
    assert writes(emulator.requests()) == []
