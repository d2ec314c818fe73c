"""Reverse private endpoints across environments: one base endpoint manifest, and a pipe naming
it, applied to two environments gives each organization its own endpoint (a different id) and
each pipe its own; `render` and `compare` show an endpoint whose DNS mappings one environment's
overlay changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.emulator import OTHER_ORG_ID
from tests.support.cli import (
    UNPACED,
    copy_environments_example,
    environments_env,
    run_cli,
    write_manifest,
)
from tests.support.emulator import Emulator
from tests.support.pipes import MSK, kafka_pipe

pytestmark = pytest.mark.integration

ENDPOINT = {
    "service": "analytics",
    "description": "orders cluster",
    "type": "MSK_MULTI_VPC",
    "mskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/orders/1a2b3c4d",
    "mskAuthentication": "SASL_IAM",
    "customPrivateDnsMappings": [],
}


def test_one_base_endpoint_gives_each_environment_its_own_endpoint_and_pipe(
    tmp_path: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_environments_example(tmp_path, monkeypatch)
    base = project / "base"
    endpoint = {k: v for k, v in MSK.items() if k != "organizationId"}
    write_manifest(
        base / "endpoints" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", endpoint
    )
    pipe = {k: v for k, v in kafka_pipe(["msk-orders"]).items() if k != "organizationId"}
    write_manifest(
        base / "pipes" / "private.yaml", "Pipe", "orders-private", {**pipe, "service": "analytics"}
    )
    env = environments_env(project, emulator)
    ids = {}
    for name in ("staging", "production"):
        applied = run_cli(["apply", "--env", name, "--auto-approve", *UNPACED], env)
        assert applied.exit_code == 0, applied.output
        shown = run_cli(
            ["state", "show", "ReversePrivateEndpoint/msk-orders", "--env", name, "-o", "json"], env
        )
        assert shown.exit_code == 0, shown.output
        ids[name] = shown.json()["id"]
        planned = run_cli(["plan", "--env", name, "--detailed-exitcode", *UNPACED], env)
        assert planned.exit_code == 0, planned.output
    assert ids["staging"] != ids["production"]
    data = emulator.data()
    pipes = {p["serviceId"]: p for p in data["pipes"].values() if p["name"] == "orders-private"}
    endpoints = data["reversePrivateEndpoints"]
    for name, ident in ids.items():
        service = endpoints[ident]["serviceId"]
        assert pipes[service]["source"]["kafka"]["reversePrivateEndpointIds"] == [ident], name
    organizations = {
        data["services"][endpoints[i]["serviceId"]]["organizationId"] for i in ids.values()
    }
    assert organizations == {OTHER_ORG_ID, emulator.org_id}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example project with a base endpoint and a production overlay of its DNS mappings."""
    root = copy_environments_example(tmp_path, monkeypatch)
    write_manifest(
        root / "base" / "endpoints" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", ENDPOINT
    )
    (root / "overlays" / "production" / "msk.yaml").write_text(
        "kind: ReversePrivateEndpoint\nmetadata:\n  name: msk-orders\nspec:\n"
        "  customPrivateDnsMappings:\n    - privateDnsName: kafka.orders.internal\n",
        encoding="utf-8",
    )
    return root


def test_render_shows_a_reverse_private_endpoint_with_its_sources(project: Path) -> None:
    staging = run_cli(["render", "--env", "staging"], environments_env(project))
    assert staging.exit_code == 0, staging.output
    assert "# Source: base/endpoints/msk.yaml\n" in staging.stdout
    assert "kind: ReversePrivateEndpoint\n" in staging.stdout
    production = run_cli(["render", "--env", "production", "-o", "json"], environments_env(project))
    assert production.exit_code == 0, production.output
    found = {m["key"]: m["manifest"] for m in production.json()["manifests"]}
    spec = found["ReversePrivateEndpoint/msk-orders"]["spec"]
    assert spec["customPrivateDnsMappings"] == [{"privateDnsName": "kafka.orders.internal"}]
    assert spec["mskClusterArn"] == ENDPOINT["mskClusterArn"]


def test_compare_shows_the_endpoint_field_that_differs(project: Path) -> None:
    result = run_cli(["compare", "staging", "production", "-o", "json"], environments_env(project))
    assert result.exit_code == 0, result.output
    keys = [r["key"] for r in result.json()["resources"]]
    assert "ReversePrivateEndpoint/msk-orders" in keys
    text = run_cli(["compare", "staging", "production"], environments_env(project))
    assert text.exit_code == 0, text.output
    assert "ReversePrivateEndpoint/msk-orders" in text.stdout
    assert "spec.customPrivateDnsMappings" in text.stdout
