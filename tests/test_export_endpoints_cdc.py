"""`reconcile export --endpoints/--cdc-scaling`: a service's reverse private endpoints and CDC
capacity as manifests that validate and plan to no changes."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from tests.support.emulator import Emulator
from tests.support.inventory import invoke
from tests.support.seed_ids import ANALYTICS


def test_endpoints_and_cdc_scaling_export_and_plan_to_no_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = invoke(
        emulator, "export", "--service", "analytics", "--endpoints", "--cdc-scaling",
        "--dir", str(tmp_path),
    )  # fmt: skip
    assert out.code == 0, out.error
    endpoints = sorted(p.name for p in (tmp_path / "endpoints").glob("*.yaml"))
    assert endpoints == ["orders-brokers.yaml", "streaming-cluster-new.yaml"]
    brokers = YAML(typ="safe").load((tmp_path / "endpoints" / "orders-brokers.yaml").read_text())
    assert brokers["kind"] == "ReversePrivateEndpoint"
    spec = brokers["spec"]
    assert spec["type"] == "VPC_ENDPOINT_SERVICE"
    assert spec["vpcEndpointServiceName"] == "vpce-svc-0a1b2c3d4e5f60718"
    assert spec["description"] == "orders brokers"
    assert spec["customPrivateDnsMappings"] == []
    assert not {"status", "dnsNames", "endpointId", "id", "privateDnsNames"} & set(spec)
    cdc = YAML(typ="safe").load((tmp_path / "cdc" / "analytics-cdc.yaml").read_text())
    assert cdc["kind"] == "CdcScaling"
    assert cdc["spec"]["replicaCpuMillicores"] == 2000 and cdc["spec"]["replicaMemoryGb"] == 8
    valid = invoke(emulator, "validate", str(tmp_path))
    assert valid.code == 0, valid.output + valid.error
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error
    assert "No changes." in plan.output


def test_a_service_without_cdc_capacity_exports_no_cdc_manifest(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = invoke(
        emulator, "export", "--service", "archive", "--cdc-scaling", "--dir", str(tmp_path)
    )
    assert out.code == 0, out.error
    assert not (tmp_path / "cdc").exists()


def test_by_name_endpoints_name_their_service_and_still_plan_to_no_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = invoke(
        emulator, "export", "--service", ANALYTICS, "--endpoints", "--cdc-scaling", "--by-name",
        "--dir", str(tmp_path),
    )  # fmt: skip
    assert out.code == 0, out.error
    brokers = YAML(typ="safe").load((tmp_path / "endpoints" / "orders-brokers.yaml").read_text())
    assert brokers["spec"]["service"] == "analytics"
    assert not {"organizationId", "serviceId"} & set(brokers["spec"])
    cdc = YAML(typ="safe").load((tmp_path / "cdc" / "analytics-cdc.yaml").read_text())
    assert cdc["spec"]["service"] == "analytics" and "organizationId" not in cdc["spec"]
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error


def test_endpoints_and_cdc_scaling_need_a_service(emulator: Emulator, tmp_path: Path) -> None:
    out = invoke(emulator, "export", "--dashboards", "--endpoints", "--dir", str(tmp_path))
    assert out.code == 1 and "--endpoints needs --service" in out.error
    assert not list(tmp_path.iterdir())


def test_endpoint_fields_come_in_the_order_a_person_writes_them(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = invoke(
        emulator, "export", "--service", "analytics", "--endpoints", "--dir", str(tmp_path)
    )
    assert out.code == 0, out.error
    spec = YAML(typ="safe").load((tmp_path / "endpoints" / "orders-brokers.yaml").read_text())
    assert list(spec["spec"]) == [
        "organizationId",
        "service",
        "description",
        "type",
        "vpcEndpointServiceName",
        "customPrivateDnsMappings",
    ]
