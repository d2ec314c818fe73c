"""An organization's plain fields beside its private endpoints: ``enableCoreDumps`` is planned
as one idempotent PATCH against the emulator, applied, and then plans to no changes."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import ORGANIZATION, write


def test_core_dumps_are_planned_applied_and_then_unchanged(
    emulator: Emulator, tmp_path: Path
) -> None:
    write(tmp_path / "m", "org.yaml", ORGANIZATION + "  enableCoreDumps: true\n")
    state = ["--state", str(tmp_path / "state.json")]
    planned = run_cli(["plan", str(tmp_path / "m"), *state, "--detailed-exitcode"], emulator.env())
    assert planned.exit_code == 2, planned.output
    assert "~ enableCoreDumps: false → true" in planned.stdout
    applied = run_cli(["apply", str(tmp_path / "m"), *state, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    again = run_cli(["plan", str(tmp_path / "m"), *state, "--detailed-exitcode"], emulator.env())
    assert again.exit_code == 0, again.output
