"""Dashboards bound by name, and copies of dashboard manifests, as the plan shows them.

A dashboard adopted by its display name is shown with the live dashboard's id. A copy of a
dashboard manifest under a new ``metadata.name`` is a new dashboard whenever the run does not
cover the whole project (a file planned alone, with or without a project file): a rename is
inferred only from a run over every manifest, or said with ``metadata.renamedFrom``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cli import TILE, UNPACED, run_cli, write_manifest
from tests.support.emulator import Emulator


def _dashboard(path: Path, slug: str, display: str = "Ops") -> Path:
    return write_manifest(path, "Dashboard", slug, {"name": display, "tiles": [TILE], "tags": []})


def _live_dashboard(emulator: Emulator, name: str) -> str:
    answer = httpx.post(
        f"{emulator.url}/api/v2/dashboards",
        json={"name": name, "tiles": [TILE], "tags": []},
        headers={"Authorization": f"Bearer {emulator.token}"},
    )
    answer.raise_for_status()
    body: dict[str, Any] = answer.json()
    data = body.get("data", body)
    return str(data["id"])


def test_an_adopted_dashboard_is_shown_with_its_live_id(emulator: Emulator, tmp_path: Path) -> None:
    ident = _live_dashboard(emulator, "Handmade")
    _dashboard(tmp_path / "m" / "handmade.yaml", "handmade", "Handmade")
    result = run_cli(["plan", str(tmp_path / "m"), "--show-unchanged", *UNPACED], emulator.env())
    assert result.exit_code == 0, result.output
    assert f"dashboard handmade (adopted by name: dashboard {ident})" in result.stdout
    assert "adopted by name: pipe" not in result.stdout


@pytest.mark.parametrize("with_project", [True, False], ids=["project-file", "no-project-file"])
def test_a_copy_planned_alone_is_a_new_dashboard(
    emulator: Emulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    with_project: bool,
) -> None:
    """``plan extra/copy.yaml`` after the original was applied: one to create, none renamed."""
    monkeypatch.chdir(tmp_path)
    if with_project:
        monkeypatch.delenv("RECONCILE_CONFIG")
        (tmp_path / "reconcile.yaml").write_text("manifests:\n  - m\n")
    _dashboard(tmp_path / "m" / "ops.yaml", "ops")
    state = tmp_path / ".reconcile" / "state.json"
    env = {**emulator.env(), "RECONCILE_STATE": str(state)}
    assert run_cli(["apply", "m", "--auto-approve", *UNPACED], env).exit_code == 0
    original = json.loads(state.read_text())["resources"]["Dashboard/ops"]["id"]
    _dashboard(tmp_path / "extra" / "copy.yaml", "ops-copy")
    alone = run_cli(["plan", "extra/copy.yaml", *UNPACED], env)
    assert alone.exit_code == 0, alone.output
    assert "renamed from" not in alone.stdout
    assert "to rename" not in alone.stdout
    assert "+ dashboard ops-copy (create)" in alone.stdout, alone.output
    applied = run_cli(["apply", "extra/copy.yaml", "--auto-approve", *UNPACED], env)
    assert applied.exit_code == 0, applied.output
    records = json.loads(state.read_text())["resources"]
    assert records["Dashboard/ops"]["id"] == original
    assert records["Dashboard/ops-copy"]["id"] != original
