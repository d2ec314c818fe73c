"""What plan and apply say about resources that lost their manifests, and about an apply that
could do nothing, against the emulator through the real CLI.

A pipe or dashboard this tool created whose manifest is gone is a planned delete under
``--prune`` (so ``--detailed-exitcode`` exits 2); without ``--prune`` the plan's note names each
such resource and the flag. An apply where every action has an error never says
``Nothing to apply.``: it says that nothing was applied because of the errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import TILE, UNPACED, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec
from tests.support.seed_ids import ORG_ID


def _run(command: str, root: Path, state: Path, env: dict[str, str], *extra: str) -> Any:
    args = [command, str(root), "--state", str(state), *UNPACED, *extra]
    return run_cli([*args, "--auto-approve"] if command == "apply" else args, env)


def _create(kind: str, root: Path) -> Path:
    if kind == "Pipe":
        return write_manifest(root / "returns.yaml", "Pipe", "returns", kafka_spec())
    return write_manifest(
        root / "returns.yaml", "Dashboard", "returns", {"name": "Returns", "tiles": [TILE]}
    )


@pytest.mark.parametrize("kind", ["Pipe", "Dashboard"])
def test_a_created_resource_whose_manifest_is_gone_is_a_change_under_prune(
    emulator: Emulator, tmp_path: Path, kind: str
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    made = _create(kind, root)
    assert _run("apply", root, state, emulator.env(), "--new-state").exit_code == 0
    made.unlink()
    write_manifest(root / "org.yaml", "Organization", "acme", {"organizationId": ORG_ID})
    assert _run("apply", root, state, emulator.env()).exit_code == 0
    pruned = _run("plan", root, state, emulator.env(), "--prune", "--detailed-exitcode")
    assert pruned.exit_code == 2, pruned.output
    assert f"- {kind.lower()} returns" in pruned.stdout
    kept = _run("plan", root, state, emulator.env(), "--detailed-exitcode")
    assert kept.exit_code == 0, kept.output
    assert f"{kind}/returns" in kept.output and "--prune" in kept.output, kept.output


def test_an_apply_whose_every_action_failed_does_not_say_nothing_to_apply(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "s.json"
    elsewhere = "11111111-2222-4333-8444-555555555555"
    write_manifest(
        root / "org.yaml", "Organization", "acme", {"organizationId": elsewhere, "name": "x"}
    )
    applied = _run("apply", root, state, emulator.env())
    assert applied.exit_code == 1, applied.output
    assert "Nothing to apply." not in applied.output
    assert "Nothing applied: 1 resource has errors" in applied.output, applied.output
    document = _run("apply", root, state, emulator.env(), "-o", "json")
    assert document.exit_code == 1
    assert "Nothing to apply." not in document.stdout
