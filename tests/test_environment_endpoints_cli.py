"""`render` and `compare` of environments show reverse private endpoints: one base manifest,
an overlay changing one environment's DNS mappings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import copy_environments_example, environments_env, run_cli, write_manifest

pytestmark = pytest.mark.integration

ENDPOINT = {
    "service": "analytics",
    "description": "orders cluster",
    "type": "MSK_MULTI_VPC",
    "mskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/orders/1a2b3c4d",
    "mskAuthentication": "SASL_IAM",
    "customPrivateDnsMappings": [],
}


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
