"""When a rename of metadata.name is inferred: only when the run's paths cover every manifest
of that kind the project file names, or when the manifest says `metadata.renamedFrom`. A copy
of a manifest planned on its own is a new resource, never a second owner of the original's
live object; pipes follow the same rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import TILE, UNPACED, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec, pipes_named
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory whose reconcile.yaml names `m` as its manifests (the working one)."""
    monkeypatch.delenv("RECONCILE_CONFIG")
    (tmp_path / "reconcile.yaml").write_text("manifests:\n  - m\nstate: state.json\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _dashboard(path: Path, slug: str, renamed_from: str | None = None) -> Path:
    write_manifest(path, "Dashboard", slug, {"name": "Ops", "tiles": [TILE], "tags": ["ops"]})
    if renamed_from is not None:
        doc = json.loads(path.read_text())
        doc["metadata"]["renamedFrom"] = renamed_from
        path.write_text(json.dumps(doc))
    return path


def _records(project: Path) -> dict[str, Any]:
    resources: dict[str, Any] = json.loads((project / "state.json").read_text())["resources"]
    return resources


def test_a_copy_of_a_dashboard_manifest_planned_alone_is_a_new_dashboard_not_a_rename(
    project: Path, emulator: Emulator
) -> None:
    _dashboard(project / "m" / "ops.yaml", "ops")
    assert run_cli(["apply", "--auto-approve", *UNPACED], emulator.env()).exit_code == 0
    original = _records(project)["Dashboard/ops"]["id"]
    _dashboard(project / "m" / "ops-copy.yaml", "ops-copy")
    alone = run_cli(["plan", "m/ops-copy.yaml", *UNPACED], emulator.env())
    assert alone.exit_code == 0, alone.output
    assert "renamed from" not in alone.stdout
    assert "+ dashboard ops-copy" in alone.stdout and "Dashboard/ops" in alone.stdout
    applied = run_cli(["apply", "m/ops-copy.yaml", "--auto-approve", *UNPACED], emulator.env())
    assert applied.exit_code == 0, applied.output
    records = _records(project)
    assert records["Dashboard/ops"]["id"] == original  # the original keeps its record
    assert records["Dashboard/ops-copy"]["id"] != original
    # The whole project now has two manifests with one display name: the existing error.
    whole = run_cli(["plan", *UNPACED], emulator.env())
    assert whole.exit_code == 1 and "dashboard named 'Ops'" in whole.stderr


def test_a_rename_in_a_partial_run_needs_renamed_from(project: Path, emulator: Emulator) -> None:
    _dashboard(project / "m" / "ops.yaml", "ops")
    write_manifest(
        project / "m" / "other.yaml", "Dashboard", "other", {"name": "Other", "tiles": [TILE]}
    )
    assert run_cli(["apply", "--auto-approve", *UNPACED], emulator.env()).exit_code == 0
    original = _records(project)["Dashboard/ops"]["id"]
    (project / "m" / "ops.yaml").unlink()
    _dashboard(project / "m" / "operations.yaml", "operations")
    partial = run_cli(["plan", "m/operations.yaml", *UNPACED], emulator.env())
    assert "renamed from" not in partial.stdout  # the run does not see the whole project
    whole = run_cli(["plan", *UNPACED], emulator.env())  # it does: the rename is inferred
    assert whole.exit_code == 0 and "renamed from Dashboard/ops" in whole.stdout
    _dashboard(project / "m" / "operations.yaml", "operations", renamed_from="ops")
    said = run_cli(["apply", "m/operations.yaml", "--auto-approve", *UNPACED], emulator.env())
    assert said.exit_code == 0 and "renamed from Dashboard/ops" in said.stdout
    records = _records(project)
    assert "Dashboard/ops" not in records
    assert records["Dashboard/operations"]["id"] == original
    assert len(emulator.data()["dashboards"]) == 2


def test_a_pipe_renamed_with_renamed_from_keeps_its_pipe_and_ownership(
    project: Path, emulator: Emulator
) -> None:
    write_manifest(project / "m" / "returns.yaml", "Pipe", "returns", kafka_spec())
    pinned = {"organizationId": ORG_ID, "serviceId": ANALYTICS, "pipeId": KAFKA_PIPE}
    write_manifest(project / "m" / "orders.yaml", "Pipe", "orders", pinned)  # another pipe
    assert run_cli(["apply", "--auto-approve", *UNPACED], emulator.env()).exit_code == 0
    (pipe,) = pipes_named(emulator, "returns")
    (project / "m" / "returns.yaml").unlink()
    path = write_manifest(project / "m" / "refunds.yaml", "Pipe", "refunds", kafka_spec())
    partial = run_cli(["plan", str(path.relative_to(project)), *UNPACED], emulator.env())
    assert partial.exit_code == 0 and "renamed from" not in partial.stdout
    assert "Pipe/returns" in partial.stdout  # held by the old name: not adopted, said why
    doc = json.loads(path.read_text())
    doc["metadata"]["renamedFrom"] = "returns"
    path.write_text(json.dumps(doc))
    said = run_cli(["apply", "m/refunds.yaml", "--auto-approve", *UNPACED], emulator.env())
    assert said.exit_code == 0, said.output
    assert "renamed from Pipe/returns" in said.stdout
    records = _records(project)
    assert "Pipe/returns" not in records
    assert records["Pipe/refunds"]["id"] == pipe["id"]
    assert records["Pipe/refunds"]["createdByUs"] is True
    assert [p["id"] for p in pipes_named(emulator, "returns")] == [pipe["id"]]


def test_prune_over_one_file_never_deletes_a_dashboard_whose_manifest_is_elsewhere(
    project: Path, emulator: Emulator
) -> None:
    _dashboard(project / "m" / "ops.yaml", "ops")
    write_manifest(
        project / "m" / "other.yaml", "Dashboard", "other", {"name": "Other", "tiles": [TILE]}
    )
    assert run_cli(["apply", "--auto-approve", *UNPACED], emulator.env()).exit_code == 0
    alone = run_cli(["plan", "m/other.yaml", "--prune", *UNPACED], emulator.env())
    assert alone.exit_code == 0, alone.output
    assert "DELETE" not in alone.stdout, alone.stdout
    assert "--prune deletes no dashboard in this run" in alone.output
