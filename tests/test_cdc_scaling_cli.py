"""A service's CDC scaling through the real command line against an emulator on a port: a
change as one PATCH, the 4-GB-per-core rule checked before anything is sent, and a service
without a database pipe, whose scaling is set right after the apply creates its first one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cli import postgres_source, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import ANALYTICS, ARCHIVE, ORG_ID


def _args(command: str, tmp_path: Path, *extra: str) -> list[str]:
    args = [command, str(tmp_path / "m"), "--state", str(tmp_path / "s.json"), *extra]
    return [*args, "--auto-approve"] if command == "apply" else args


def sent(emulator: Emulator) -> list[tuple[str, str, Any]]:
    return [
        (w["method"], w["path"].rsplit("/", 1)[-1], w.get("body"))
        for w in writes(emulator.requests())
    ]


def test_a_capacity_change_is_one_patch_and_then_nothing(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {"service": "analytics", "replicaCpuMillicores": 4000, "replicaMemoryGb": 16}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "analytics-cdc", spec)
    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert planned.exit_code == 2, planned.output
    assert "replicaCpuMillicores: 2000 → 4000" in planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    body = {"replicaCpuMillicores": 4000, "replicaMemoryGb": 16}
    assert sent(emulator) == [("PATCH", "pipesCdcScaling", body)]
    assert emulator.data()["cdcScaling"][ANALYTICS] == body
    final = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert final.exit_code == 0, final.output


def test_memory_other_than_4_gb_per_core_is_refused_before_anything_is_sent(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {"serviceId": ANALYTICS, "replicaCpuMillicores": 4000, "replicaMemoryGb": 8}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "analytics-cdc", spec)
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code != 0
    assert "cdc.yaml:" in planned.output
    assert (
        "replicaMemoryGb must be 4 GB per core: 16 for replicaCpuMillicores 4000, not 8"
        in planned.output
    )
    odd = {"serviceId": ANALYTICS, "replicaCpuMillicores": 1500}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "analytics-cdc", odd)
    refused = run_cli(_args("plan", tmp_path), emulator.env())
    assert "1500 is not a multiple of 1000" in refused.output
    assert emulator.requests() == []


def database_pipe() -> dict[str, Any]:
    return {
        "organizationId": ORG_ID,
        "serviceId": ARCHIVE,
        "name": "crm-cdc",
        "source": postgres_source(
            {"sourceSchemaName": "public", "sourceTable": "a", "targetTable": "a"}
        ),
        "destination": {"database": "crm"},
    }


def test_before_the_first_database_pipe_the_scaling_is_set_right_after_it(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.set_service_state(ARCHIVE, "running")
    spec = {"serviceId": ARCHIVE, "replicaCpuMillicores": 3000}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "archive-cdc", spec)
    alone = run_cli(_args("plan", tmp_path), emulator.env())
    assert alone.exit_code == 1, alone.output
    assert "has no database pipe yet" in alone.output

    write_manifest(tmp_path / "m" / "crm.yaml", "Pipe", "crm-cdc", database_pipe())
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code == 0, planned.output
    assert "set after Pipe/crm-cdc is created" in planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    order = [(m, last) for m, last, _ in sent(emulator)]
    assert order[0] == ("POST", "pipes")
    assert order[-1] == ("PATCH", "pipesCdcScaling")
    assert emulator.data()["cdcScaling"][ARCHIVE] == {
        "replicaCpuMillicores": 3000,
        "replicaMemoryGb": 12,
    }
    final = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert final.exit_code == 0, final.output


def test_a_saved_plan_of_a_capacity_change_applies_once(emulator: Emulator, tmp_path: Path) -> None:
    spec = {"service": "analytics", "replicaCpuMillicores": 4000}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "analytics-cdc", spec)
    saved = tmp_path / "cdc.plan.json"
    made = run_cli(_args("plan", tmp_path, "--out", str(saved)), emulator.env())
    assert made.exit_code == 0, made.output
    args = ["apply", "--plan", str(saved), "--state", str(tmp_path / "s.json"), "--auto-approve"]
    applied = run_cli(args, emulator.env())
    assert applied.exit_code == 0, applied.output
    assert sent(emulator) == [("PATCH", "pipesCdcScaling", {"replicaCpuMillicores": 4000})]
    again = run_cli(args, emulator.env())
    assert "already applied" in again.output
    assert len(sent(emulator)) == 1
