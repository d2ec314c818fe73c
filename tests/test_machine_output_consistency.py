"""Every `-o json` document says its format and exit code; a finding is a successful run in the metrics."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from reconciler.state.backend import locked_state
from reconciler.state.stores import open_backend
from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES


def metric(path: Path, name: str, command: str) -> float | None:
    """Return the sample ``name{command=...}`` of a metrics file, or None when absent."""
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("command") == command:
                return float(sample.value)
    return None


def test_check_backups_json_carries_format_version_and_the_finding_exit_code(
    emulator: Emulator,
) -> None:
    result = run_cli(["check", "backups", "--max-age", "26h", "-o", "json"], emulator.env())
    assert result.exit_code == 2  # the seed has one service without a recent backup
    body = result.json()
    assert body["formatVersion"] == 1 and body["exitCode"] == 2
    assert body["ok"] is False and len(body["services"]) == 3


def test_stale_backups_are_a_successful_run_with_a_last_success_timestamp(
    emulator: Emulator, tmp_path: Path
) -> None:
    metrics = tmp_path / "backups.prom"
    args = ["check", "backups", "--max-age", "26h", "--metrics-file", str(metrics)]
    assert run_cli(args, emulator.env()).exit_code == 2
    assert metric(metrics, "reconcile_run_success", "check_backups") == 1
    last = metric(metrics, "reconcile_last_success_timestamp_seconds", "check_backups")
    assert last is not None and last > 0


def test_plan_with_drift_and_detailed_exitcode_is_a_successful_run(
    emulator: Emulator, tmp_path: Path
) -> None:
    metrics = tmp_path / "plan.prom"
    manifests = EXAMPLES
    args = ["plan", str(manifests), "--state", str(tmp_path / "s.json"), "--rate", "none"]
    result = run_cli([*args, "--detailed-exitcode", "--metrics-file", str(metrics)], emulator.env())
    assert result.exit_code == 2, result.output
    assert metric(metrics, "reconcile_run_success", "plan") == 1
    assert metric(metrics, "reconcile_last_success_timestamp_seconds", "plan") is not None


def test_export_and_config_json_carry_format_version_and_exit_code(
    emulator: Emulator, tmp_path: Path
) -> None:
    exported = run_cli(
        ["export", "--org", "--dir", str(tmp_path / "m"), "-o", "json"], emulator.env()
    )
    assert exported.exit_code == 0, exported.output
    assert exported.json()["formatVersion"] == 1 and exported.json()["exitCode"] == 0
    config = run_cli(["config", "-o", "json"], emulator.env())
    assert config.json()["formatVersion"] == 1 and config.json()["exitCode"] == 0


def test_state_edits_in_json_carry_format_version_and_exit_code(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    with locked_state(open_backend(str(state), "default")) as seeded:
        seeded.record("Pipe/orders", secrets={"source.kafka.credentials": "hmac-sha256:ab"})
        seeded.save()
    env = {"RECONCILE_STATE": str(state)}
    moved = run_cli(["state", "mv", "Pipe/orders", "Pipe/orders-2", "-o", "json"], env)
    assert moved.exit_code == 0, moved.output
    assert moved.json()["formatVersion"] == 1 and moved.json()["exitCode"] == 0
    removed = run_cli(["state", "rm", "Pipe/orders-2", "-o", "json"], env)
    assert removed.json()["removed"] == ["Pipe/orders-2"]
    assert removed.json()["formatVersion"] == 1 and removed.json()["exitCode"] == 0
