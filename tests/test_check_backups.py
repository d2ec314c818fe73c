"""`reconcile check backups`: exit 0 when every selected service has a fresh done backup, 1 listing offenders."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from reconciler.inventory.reads import assess_backups
from reconciler.inventory.views import offender_line
from tests.support.emulator import Emulator
from tests.support.inventory import ISO, api_paths, invoke
from tests.support.seed_ids import ANALYTICS, ORG_ID, STAGING


def test_all_services_are_checked_and_staging_is_the_only_offender(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "26h")
    assert out.code == 2
    lines = out.output.splitlines()
    assert lines[0].split()[:2] == ["SERVICE", "STATUS"]
    status = {line.split()[0]: line.split()[1] for line in lines[1:4]}
    assert status == {"analytics": "OK", "staging": "STALE", "archive": "OK"}
    assert "1 of 3 services have no done backup newer than 26h:" in out.output
    offenders = [line for line in lines if line.startswith("  STALE ")]
    assert len(offenders) == 1
    assert re.fullmatch(
        rf"  STALE staging: last good backup {ISO} \(3d 23h ago\); "
        rf"last error {ISO} \(backup-\d{{8}}-\d{{4}}\)",
        offenders[0],
    )


def test_a_fresh_service_passes_with_exit_zero(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "26h", "--service", "analytics")
    assert out.code == 0
    assert "All 1 services have a done backup newer than 26h." in out.output
    assert "STALE" not in out.output


def test_a_stale_service_fails_with_exit_two(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "26h", "--service", "staging")
    assert out.code == 2
    assert "  STALE staging: last good backup" in out.output


def test_a_generous_limit_passes_every_service(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "5d")
    assert out.code == 0


def test_services_given_by_id_cost_one_backups_request_each(emulator: Emulator) -> None:
    out = invoke(
        emulator,
        "check",
        "backups",
        "--max-age",
        "26h",
        "--service",
        ANALYTICS,
        "--service",
        STAGING,
    )
    assert out.code == 2
    assert sorted(api_paths(emulator)) == [
        f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/backups",
        f"/v1/organizations/{ORG_ID}/services/{STAGING}/backups",
    ]


def test_default_selection_costs_one_services_request_plus_one_per_service(
    emulator: Emulator,
) -> None:
    invoke(emulator, "check", "backups", "--max-age", "26h")
    paths = api_paths(emulator)
    assert paths.count(f"/v1/organizations/{ORG_ID}/services") == 1
    assert len(paths) == 4


def test_json_output_reports_each_service_and_the_last_error(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "26h", "-o", "json")
    assert out.code == 2
    body = json.loads(out.output)
    assert body["ok"] is False and body["maxAgeSeconds"] == 26 * 3600
    by_name = {s["service"]: s for s in body["services"]}
    assert by_name["analytics"]["ok"] is True
    staging = by_name["staging"]
    assert staging["ok"] is False
    assert staging["ageSeconds"] > 95 * 3600
    assert staging["lastError"]["backupName"].startswith("backup-")


def test_an_invalid_max_age_is_an_error(emulator: Emulator) -> None:
    out = invoke(emulator, "check", "backups", "--max-age", "soon")
    assert out.code == 1
    assert "invalid duration" in out.error


def test_a_service_without_any_done_backup_is_stale() -> None:
    now = datetime(2026, 11, 22, tzinfo=UTC)
    backups = [{"status": "error", "startedAt": "2026-11-21T10:00:00Z", "backupName": "b1"}]
    result = assess_backups({"id": "s", "name": "svc"}, backups, timedelta(hours=26), now)
    assert not result.ok and result.last_good is None
    assert (
        offender_line(result) == "svc: no successful backup; last error 2026-11-21T10:00:00Z (b1)"
    )
