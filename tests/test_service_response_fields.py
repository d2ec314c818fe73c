"""plan, apply, export and get cope with every response field the real service returns
(sources' type/format/authentication, services' scaling/provider/region/tier, backups' type
and bucket provider, private endpoints' cloudProvider/region, null for an unset enum) and with
``scaling.concurrency: 0`` (auto-scaled), against the emulator on loopback."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.inventory import export_everything, invoke
from tests.support.seed_ids import ENDPOINT_READY, KINESIS_PIPE, ORG_ID, STAGING


def test_get_shows_the_new_service_backup_pipe_endpoint_and_organization_fields(
    emulator: Emulator,
) -> None:
    services = invoke(emulator, "get", "services")
    assert services.code == 0 and "production" in services.output
    assert "aws/us-east-1" in services.output and "gcp/europe-west4" in services.output
    as_json = json.loads(invoke(emulator, "get", "services", "-o", "json").output)
    assert as_json[0]["currentScaling"]["numReplicas"] == 3
    backups = invoke(emulator, "get", "backups", "--service", "analytics")
    assert backups.code == 0 and "incremental" in backups.output
    pipe = invoke(emulator, "get", "pipe", "clickstream", "--service", "staging")
    assert pipe.code == 0 and "concurrency auto" in pipe.output
    assert "IAM_ROLE" in pipe.output and "JSONEachRow" in pipe.output
    endpoint = invoke(emulator, "get", "endpoint", ENDPOINT_READY, "--service", "analytics")
    assert endpoint.code == 0
    assert "Cluster authentication:  -" in endpoint.output
    org = invoke(emulator, "get", "organization")
    assert org.code == 0 and "pe-0a1b2c3d4e5f (primary VPC) aws/us-east-1" in org.output


def test_export_with_expectations_round_trips_auto_scaled_pipes_and_new_fields(
    emulator: Emulator, tmp_path: Path
) -> None:
    export_everything(emulator, tmp_path, "--with-expectations")
    clickstream = (tmp_path / "pipes" / "clickstream.yaml").read_text(encoding="utf-8")
    assert "concurrency: 0" in clickstream
    orders = (tmp_path / "pipes" / "orders.yaml").read_text(encoding="utf-8")
    assert "authentication: PLAIN" in orders
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error


def test_concurrency_zero_is_a_valid_expectation_that_converges(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(KINESIS_PIPE, STAGING, scaling={"concurrency": 0})
    write_manifest(tmp_path / "m" / "k.yaml", "Pipe", "clickstream", spec)
    state = ["--state", str(tmp_path / "s.json")]
    assert run_cli(["validate", str(tmp_path / "m")], {}).exit_code == 0
    plan = run_cli(["plan", str(tmp_path / "m"), "--detailed-exitcode", *state], emulator.env())
    assert plan.exit_code == 0, plan.output


def test_private_endpoints_read_with_provider_and_region_can_be_removed_and_added(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {"organizationId": ORG_ID, "privateEndpoints": [{"id": "pe-new", "description": "b"}]}
    write_manifest(tmp_path / "m" / "org.yaml", "Organization", "org", spec)
    args = [str(tmp_path / "m"), "--state", str(tmp_path / "s.json")]
    applied = run_cli(["apply", *args, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    again = run_cli(["plan", *args, "--detailed-exitcode"], emulator.env())
    assert again.exit_code == 0, again.output
    (endpoint,) = emulator.data()["organizations"][ORG_ID]["privateEndpoints"]
    assert endpoint["id"] == "pe-new" and endpoint["region"]


def test_kafka_pipe_with_response_only_fields_plans_no_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(source={"kafka": {"authentication": "PLAIN", "topics": "orders"}})
    write_manifest(tmp_path / "m" / "k.yaml", "Pipe", "orders", spec)
    plan = run_cli(
        ["plan", str(tmp_path / "m"), "--detailed-exitcode", "--state", str(tmp_path / "s")],
        emulator.env(),
    )
    assert plan.exit_code == 0, plan.output
