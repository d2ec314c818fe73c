"""The emulator answers with the real service's enum values: clouds, regions, tiers, backups.

Cloud providers and regions are real values (the naming rule hides only the database vendor's
name): the demo services run on aws, gcp and azure; backups name their bucket's provider in the
service's capitals and are full or incremental; objectStorage and postgres sources carry their
``authentication``; a private endpoint's ``cloudProvider`` outside the enum is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconciler.emulator import EmulatorApp, Identities, create_app
from tests.support.emulator_app import AUTH, Client, error, ok
from tests.support.seed_ids import ANALYTICS, ARCHIVE, ORG_ID, STAGING

ORG = f"/v1/organizations/{ORG_ID}"
CLOUDS = {"aws", "gcp", "azure"}


@pytest.fixture
def client() -> Iterator[Client]:
    """A demo-key client of a fresh in-process emulator."""
    app: EmulatorApp = create_app(identities=Identities.from_env({}))
    with Client(app, auth=AUTH) as test_client:
        yield test_client


def test_demo_services_should_run_on_the_three_clouds_in_real_regions_and_tiers(
    client: Client,
) -> None:
    services = {s["id"]: s for s in ok(client.get(f"{ORG}/services"))}
    placed = {sid: (s["provider"], s["region"]) for sid, s in services.items()}
    assert placed == {
        ANALYTICS: ("aws", "us-east-1"),
        STAGING: ("gcp", "europe-west4"),
        ARCHIVE: ("azure", "eastus2"),
    }
    assert {s["tier"] for s in services.values()} == {"production", "development"}
    assert services[ANALYTICS]["iamRole"].startswith("arn:aws:iam::")
    assert services[STAGING]["iamRole"] == ""


@pytest.mark.parametrize(
    ("service", "bucket_provider"), [(ANALYTICS, "AWS"), (STAGING, "GCP"), (ARCHIVE, "AZURE")]
)
def test_backups_should_name_their_bucket_provider_and_a_real_type(
    client: Client, service: str, bucket_provider: str
) -> None:
    backups = ok(client.get(f"{ORG}/services/{service}/backups"))
    assert {b["bucket"]["bucketProvider"] for b in backups} == {bucket_provider}
    assert [b["type"] for b in backups] == ["incremental"] + ["full"] * (len(backups) - 1)
    roles = {b["bucket"]["iamRoleArn"] != "" for b in backups}
    assert roles == {bucket_provider == "AWS"}


def test_scale_seed_services_should_cycle_through_the_clouds(client: Client) -> None:
    ok(client.post("/_emulator/reset", json={"seedPipes": 4, "services": 4}))
    bench = [s for s in ok(client.get(f"{ORG}/services")) if s["name"].startswith("bench-")]
    assert [s["provider"] for s in bench] == ["aws", "gcp", "azure", "aws"]
    assert all(s["region"] in {"us-east-1", "europe-west4", "eastus2"} for s in bench)


def test_object_storage_and_postgres_sources_should_carry_their_authentication(
    client: Client,
) -> None:
    pipes = ok(client.get(f"{ORG}/services/{ANALYTICS}/pipes"))
    methods = {
        kind: body["authentication"]
        for p in pipes
        for kind, body in p["source"].items()
        if kind in ("objectStorage", "postgres")
    }
    assert methods == {"objectStorage": "IAM_ROLE", "postgres": "basic"}


def test_organization_endpoints_should_use_the_real_cloud_provider_enum(client: Client) -> None:
    assert {e["cloudProvider"] for e in ok(client.get(ORG))["privateEndpoints"]} <= CLOUDS
    added = {"id": "pe-gcp", "description": "gcp link", "cloudProvider": "gcp"}
    body = {"privateEndpoints": {"add": [{**added, "region": "europe-west4"}]}}
    assert ok(client.patch(ORG, json=body))["privateEndpoints"][-1]["cloudProvider"] == "gcp"
    wrong = {"privateEndpoints": {"add": [{**added, "id": "pe-x", "cloudProvider": "cloud"}]}}
    message = error(client.patch(ORG, json=wrong), 400)
    assert message == (
        "BAD_REQUEST: privateEndpoints.add.0.cloudProvider must be one of aws, gcp, azure"
    )
