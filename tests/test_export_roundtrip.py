"""`reconcile export` → `validate` → `plan`: exported manifests validate and plan to no changes."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import httpx
import pytest

from reconciler.inventory.documents import slugify, unique_names
from tests.support.emulator import Emulator
from tests.support.inventory import export_everything, invoke
from tests.support.seed_ids import KAFKA_PIPE, ORG_ID, PIPE_SERVICE

ROOT = Path(__file__).resolve().parent.parent

DASHBOARD = {
    "name": "Pipeline health",
    "tags": ["ops"],
    "tiles": [
        {
            "name": "Rows",
            "x": 0,
            "y": 0,
            "w": 12,
            "h": 4,
            "asRatio": False,
            "series": [{"type": "time", "dataSource": "events", "aggFn": "count", "groupBy": []}],
        }
    ],
}


def create_dashboard(emulator: Emulator) -> None:
    """POST the demo dashboard through the dashboards interface."""
    with httpx.Client(headers={"Authorization": f"Bearer {emulator.token}"}) as http:
        http.post(f"{emulator.url}/api/v2/dashboards", json=DASHBOARD).raise_for_status()


def assert_round_trip(emulator: Emulator, out: Path) -> None:
    """The directory validates and plans to no changes."""
    valid = invoke(emulator, "validate", str(out))
    assert valid.code == 0, valid.output + valid.error
    assert "10 manifests valid (8 Pipe, 1 Organization, 1 Dashboard)" in valid.output
    plan = invoke(emulator, "plan", str(out), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error
    assert "No changes." in plan.output


@pytest.mark.parametrize("extra", [(), ("--with-expectations",)], ids=["managed", "expectations"])
def test_export_of_every_pipe_kind_organization_and_dashboard_plans_to_no_changes(
    emulator: Emulator, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    create_dashboard(emulator)
    export_everything(emulator, tmp_path, *extra)
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.yaml"))
    assert files == [
        "dashboards/pipeline-health.yaml",
        "organization.yaml",
        "pipes/audit-log.yaml",
        "pipes/billing-cdc.yaml",
        "pipes/clickstream.yaml",
        "pipes/customers-cdc.yaml",
        "pipes/events-archive.yaml",
        "pipes/orders.yaml",
        "pipes/payments.yaml",
        "pipes/telemetry.yaml",
    ]
    assert_round_trip(emulator, tmp_path)


def test_write_only_fields_are_left_out_with_a_comment_showing_how_to_add_them(
    emulator: Emulator, tmp_path: Path
) -> None:
    assert invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path)).code == 0
    orders = (tmp_path / "pipes" / "orders.yaml").read_text()
    assert (
        "      # credentials: {username: {fromEnv: ORDERS_USERNAME}, password: {fromEnv: ORDERS_PASSWORD}}\n"
        in orders
    )
    assert not re.search(r"^\s*credentials:", orders, re.M)
    storage = (tmp_path / "pipes" / "events-archive.yaml").read_text()
    assert "# accessKey: {accessKeyId: {fromEnv: EVENTS_ARCHIVE_ACCESS_KEY_ID}" in storage
    assert "# connectionString: {fromEnv: EVENTS_ARCHIVE_CONNECTION_STRING}" in storage


def test_read_only_fields_appear_only_with_expectations(emulator: Emulator, tmp_path: Path) -> None:
    plain, full = tmp_path / "plain", tmp_path / "full"
    assert invoke(emulator, "export", "--service", "analytics", "--dir", str(plain)).code == 0
    assert (
        invoke(
            emulator, "export", "--service", "analytics", "--with-expectations", "--dir", str(full)
        ).code
        == 0
    )
    managed = (plain / "pipes" / "orders.yaml").read_text()
    expected = (full / "pipes" / "orders.yaml").read_text()
    for read_only in ("brokers:", "topics:", "state:", "scaling:", "table: orders"):
        assert read_only not in managed
        assert read_only in expected
    for writable in ("iamRole:", "reversePrivateEndpointIds:", "fieldMappings:", "columns:"):
        assert writable in managed
    postgres = (plain / "pipes" / "customers-cdc.yaml").read_text()
    assert "tableMappings:" in postgres and "syncIntervalSeconds: 60" in postgres
    assert "publicationName" not in postgres


def test_files_exported_inside_the_project_holding_the_schemas_start_with_a_modeline(
    emulator: Emulator,
) -> None:
    with tempfile.TemporaryDirectory(dir=ROOT) as inside:
        out = Path(inside)
        assert (
            invoke(emulator, "export", "--service", "analytics", "--org", "--dir", str(out)).code
            == 0
        )
        for file, schema in [
            (out / "pipes" / "orders.yaml", "pipe.schema.json"),
            (out / "organization.yaml", "organization.schema.json"),
        ]:
            first = file.read_text().splitlines()[0]
            match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
            assert match and match.group(1).endswith(schema)
            assert not match.group(1).startswith("/")
            assert (file.parent / match.group(1)).resolve().is_file()


def test_files_exported_elsewhere_name_no_path_of_this_machine(
    emulator: Emulator, tmp_path: Path
) -> None:
    project = tmp_path / "team-repo"
    (project / ".git").mkdir(parents=True)
    assert (
        invoke(emulator, "export", "--service", "analytics", "--dir", str(project / "m")).code == 0
    )
    text = (project / "m" / "pipes" / "orders.yaml").read_text()
    assert "$schema=" not in text
    assert "schema.json" not in text
    assert str(ROOT) not in text


def test_exported_manifests_manage_writable_fields(emulator: Emulator, tmp_path: Path) -> None:
    assert (
        invoke(
            emulator,
            "export",
            "--service",
            "analytics",
            "--pipe",
            KAFKA_PIPE,
            "--dir",
            str(tmp_path),
        ).code
        == 0
    )
    with httpx.Client(auth=(emulator.key_id, emulator.key_secret)) as http:
        http.patch(
            f"{emulator.url}/v1/organizations/{ORG_ID}/services/{PIPE_SERVICE[KAFKA_PIPE]}/pipes/{KAFKA_PIPE}",
            json={"settings": {"streaming_max_insert_wait_ms": 9000}},
        ).raise_for_status()
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 2
    assert "settings.streaming_max_insert_wait_ms: 9000 → 5000" in plan.output


def test_names_are_slugs_made_unique_with_a_suffix() -> None:
    assert slugify("Pipeline health!") == "pipeline-health"
    assert slugify("***", "pipe") == "pipe"
    assert unique_names(["Orders", "orders", "ORDERS"], "pipe") == [
        "orders",
        "orders-2",
        "orders-3",
    ]
