"""The deterministic demo seed and the scale seed used by benchmarks.

The demo organization, its three services, eight pipes (one of each source kind, three more
kafka pipes for the other authentication methods, and a second postgres one: one Paused and
one Running), two reverse private endpoints and the backups have fixed uuids,
because example manifests and tests written elsewhere reference them. The second organization
(another key's) has one service, ``analytics`` on GCP, and no pipes: the environments example
creates its own pipe there, as a staging organization would have. Creation times are fixed;
only backup times are relative to the clock at seed time, so that a backup-freshness check has
something meaningful to say (analytics fresh, staging stale with a newer failure).

The scale seed adds S ``bench-NN`` services and N ``pipe-NNNNN`` pipes spread round-robin over
them, cycling through the four source kinds, with uuid5 ids derived from the index. The pipe
records come from the builders of ``seed_pipes``; this module decides which records exist,
with which ids, on which service, and builds the services, endpoints and backups itself.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from reconciler.emulator.protocol import DEMO_ORG_ID, OTHER_ORG_ID, iso_ms
from reconciler.emulator.seed_pipes import (
    CREATED,
    kafka,
    kinesis,
    mapping,
    object_storage,
    pipe,
    postgres,
)

__all__: list[str] = []


ANALYTICS = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
STAGING = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a72"
ARCHIVE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a73"
# The second organization's only service (same name as the demo one: one manifest, two orgs).
OTHER_ANALYTICS = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a74"
KAFKA_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"
OBJECT_STORAGE_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c62"
KINESIS_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c63"
POSTGRES_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c64"
POSTGRES_RUNNING_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c65"
# Kafka pipes reading with the other credential shapes (access key, connection string, mTLS).
KAFKA_IAM_USER_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c66"
KAFKA_CONNECTION_STRING_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c67"
KAFKA_MUTUAL_TLS_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c68"
ENDPOINT_READY = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51"
ENDPOINT_PROVISIONING = "e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e52"

# Fixed namespace so that scale-seed ids are the same in every run and on every machine.
_NAMESPACE = uuid.UUID("6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f")
# Cloud providers and regions are the real service's enum values (the naming rule hides only
# the database vendor's name): the demo services run on each of the three clouds.
CLOUD_PROVIDER = "aws"
REGION = "us-east-1"
PLACEMENTS: tuple[tuple[str, str], ...] = (
    ("aws", "us-east-1"),
    ("gcp", "europe-west4"),
    ("azure", "eastus2"),
)
# The backup bucket's provider is spelled in capitals by the service.
BUCKET_PROVIDERS = {"aws": "AWS", "gcp": "GCP", "azure": "AZURE"}
# Real service tiers (development services are the small single-replica kind).
TIERS = ("production", "development")
KINDS = ("kafka", "objectStorage", "kinesis", "postgres")


def build_seed(now: datetime, seed_pipes: int = 0, services: int = 3) -> dict[str, Any]:
    """The whole store: the demo organization, plus the scale seed when ``seed_pipes`` > 0."""
    data: dict[str, Any] = {
        "organizations": {
            DEMO_ORG_ID: {
                "id": DEMO_ORG_ID,
                "createdAt": "2023-11-20T08:15:00.000Z",
                "name": "Acme Analytics",
                "privateEndpoints": [
                    {
                        "id": "pe-0a1b2c3d4e5f",
                        "description": "primary VPC",
                        "cloudProvider": CLOUD_PROVIDER,
                        "region": REGION,
                    }
                ],
                "byocConfig": [],
                "enableCoreDumps": False,
            },
            OTHER_ORG_ID: {
                "id": OTHER_ORG_ID,
                "createdAt": "2024-01-10T10:00:00.000Z",
                "name": "Other Org",
                "privateEndpoints": [],
                "byocConfig": [],
                "enableCoreDumps": False,
            },
        },
        "services": {},
        "pipes": {},
        "reversePrivateEndpoints": {},
        "backups": {},
        "dashboards": {},
        "transitions": {},
        "endpointTransitions": {},
        "cdcScaling": {},
    }
    tags_prod = [{"key": "Environment", "value": "Production"}]
    aws, gcp, azure = PLACEMENTS
    tags_analytics = [*tags_prod, {"key": "isActive"}]
    _add_service(data, ANALYTICS, "analytics", "running", tags_analytics, aws, "production")
    tags_staging = [{"key": "Environment", "value": "Staging"}]
    _add_service(data, STAGING, "staging", "running", tags_staging, gcp, "development")
    _add_service(data, ARCHIVE, "archive", "idle", tags_prod, azure, "production")
    tags_other = [{"key": "Environment", "value": "Staging"}]
    _add_service(
        data, OTHER_ANALYTICS, "analytics", "running", tags_other, gcp, "development", OTHER_ORG_ID
    )
    _add_demo_pipes(data)
    _add_endpoints(data)
    _add_backups(data, ANALYTICS, now, [(2, "done"), (26, "done"), (50, "done"), (74, "error")])
    _add_backups(data, STAGING, now, [(5, "error"), (96, "done"), (120, "done")])
    _add_backups(data, ARCHIVE, now, [(1, "in_progress"), (20, "done"), (44, "done")])
    _add_backups(data, OTHER_ANALYTICS, now, [(4, "done"), (28, "done")])
    if seed_pipes > 0:
        add_scale_seed(data, now, seed_pipes, max(1, services))
    return data


def _add_service(
    data: dict[str, Any],
    sid: str,
    name: str,
    state: str,
    tags: list[Any],
    placement: tuple[str, str],
    tier: str,
    org_id: str = DEMO_ORG_ID,
) -> None:
    provider, region = placement
    host = f"{name}.{region}.{provider}.db.example.com"
    # Only a service on AWS has an IAM role of its own to show.
    role = f"arn:aws:iam::123456789012:role/service-{name}" if provider == "aws" else ""
    # A development service is the small kind: the smallest memory the service offers
    # (3 replicas of 8 GiB: totals are multiples of 12 from 24, replicas multiples of 4 from 8).
    replicas, replica_gb = (3, 8) if tier == "development" else (3, 16)
    data["services"][sid] = {
        "id": sid,
        "organizationId": org_id,
        "name": name,
        "state": state,
        "tags": tags,
        "engineVersion": "24.8",
        "endpoints": [
            {"protocol": "https", "host": host, "port": 8443, "username": "default"},
            {"protocol": "nativesecure", "host": host, "port": 9440, "username": "default"},
            {"protocol": "mysql", "host": host, "port": 3306, "username": f"default_{name}"},
        ],
        "minTotalMemoryGb": replicas * replica_gb,
        "maxTotalMemoryGb": replicas * replica_gb * 4,
        "minReplicaMemoryGb": replica_gb,
        "maxReplicaMemoryGb": replica_gb * 4,
        "numReplicas": replicas,
        "idleScaling": state == "idle",
        "idleTimeoutMinutes": 15,
        "ipAccessList": [{"source": "203.0.113.0/24", "description": "office"}],
        "createdAt": CREATED,
        "encryptionKey": "",
        "encryptionAssumedRoleIdentifier": "",
        "iamRole": role,
        "privateEndpointIds": [],
        "availablePrivateEndpointIds": [
            pe["id"] for pe in data["organizations"][org_id]["privateEndpoints"]
        ],
        "dataWarehouseId": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
        "isPrimary": name == "analytics",
        "isReadonly": False,
        "byocId": "",
        "hasTransparentDataEncryption": False,
        "transparentDataEncryptionKeyId": "",
        "encryptionRoleId": "",
        "provider": provider,
        "region": region,
        "tier": tier,
        "autoscalingMode": "vertical",
        "currentScaling": {
            "numReplicas": replicas,
            "replicaMemoryGb": replica_gb,
            "totalMemoryGb": replicas * replica_gb,
        },
    }


def _add_demo_pipes(data: dict[str, Any]) -> None:
    pipes = data["pipes"]
    pipes[KAFKA_PIPE] = pipe(
        KAFKA_PIPE,
        ANALYTICS,
        "orders",
        "Running",
        kafka("orders", "orders", [ENDPOINT_READY]),
        "orders",
    )
    pipes[OBJECT_STORAGE_PIPE] = pipe(
        OBJECT_STORAGE_PIPE,
        ANALYTICS,
        "events-archive",
        "Running",
        object_storage("events"),
        "events",
    )
    pipes[KINESIS_PIPE] = pipe(
        KINESIS_PIPE,
        STAGING,
        "clickstream",
        "Running",
        kinesis("clickstream", "clickstream", "us-east-1"),
        "clickstream",
    )
    pipes[KINESIS_PIPE]["scaling"]["concurrency"] = 0  # auto-scaled
    customers = [
        mapping("customers", ["ssn"], ["customer_id"]),
        mapping("addresses", [], []),
    ]
    pipes[POSTGRES_PIPE] = pipe(
        POSTGRES_PIPE,
        ANALYTICS,
        "customers-cdc",
        "Paused",
        postgres("customers-cdc", "crm", customers),
        "customers",
    )
    for pid, name, method in (
        (KAFKA_IAM_USER_PIPE, "payments", "IAM_USER"),
        (KAFKA_CONNECTION_STRING_PIPE, "telemetry", "PLAIN"),
        (KAFKA_MUTUAL_TLS_PIPE, "audit-log", "MUTUAL_TLS"),
    ):
        source = kafka(name, name, [])
        source["kafka"]["authentication"] = method
        pipes[pid] = pipe(pid, ANALYTICS, name, "Running", source, name.replace("-", "_"))
    billing = [mapping("invoices", [], ["invoice_id"]), mapping("payments", ["card_number"], [])]
    pipes[POSTGRES_RUNNING_PIPE] = pipe(
        POSTGRES_RUNNING_PIPE,
        STAGING,
        "billing-cdc",
        "Running",
        postgres("billing-cdc", "billing", billing),
        "invoices",
    )


def _add_endpoints(data: dict[str, Any]) -> None:
    # Only the fields of the endpoint's type are present (the others are absent, not null).
    common = {"serviceId": ANALYTICS, "customPrivateDnsMappings": [], "privateDnsNames": []}
    data["reversePrivateEndpoints"][ENDPOINT_READY] = {
        **common,
        "id": ENDPOINT_READY,
        "description": "orders brokers",
        "type": "VPC_ENDPOINT_SERVICE",
        "vpcEndpointServiceName": "vpce-svc-0a1b2c3d4e5f60718",
        "endpointId": "vpce-0f1e2d3c4b5a69788",
        "dnsNames": ["vpce-0f1e2d3c4b5a69788.vpce-svc.us-east-1.example.com"],
        "status": "Ready",
    }
    data["reversePrivateEndpoints"][ENDPOINT_PROVISIONING] = {
        **common,
        "id": ENDPOINT_PROVISIONING,
        "description": "streaming cluster (new)",
        "type": "MSK_MULTI_VPC",
        "mskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/streaming/5f6e7d8c",
        "mskAuthentication": "SASL_IAM",
        "endpointId": "",
        "dnsNames": [],
        "status": "Provisioning",
    }


_BUCKET_URLS = {
    "aws": "https://acme-backups.s3.{region}.amazonaws.com",
    "gcp": "https://storage.googleapis.com/acme-backups-{region}",
    "azure": "https://acmebackups{region}.blob.core.windows.net/backups",
}


def _add_backups(
    data: dict[str, Any], sid: str, now: datetime, ages: list[tuple[int, str]]
) -> None:
    service = data["services"][sid]
    provider, region = service["provider"], service["region"]
    aws = provider == "aws"
    backups = []
    for index, (hours, status) in enumerate(ages):
        started = now - timedelta(hours=hours)
        duration = 0 if status == "in_progress" else 420 + hours
        bid = backup_id(sid, hours)
        backup: dict[str, Any] = {
            "id": bid,
            "serviceId": sid,
            "status": status,
            "startedAt": iso_ms(started),
            "sizeInBytes": 0 if status != "done" else 5_368_709_120 + hours * 1_048_576,
            "durationInSeconds": duration,
            "backupName": f"backup-{started:%Y%m%d-%H%M}",
            "type": "incremental" if index == 0 else "full",
            "bucket": {
                "bucketProvider": BUCKET_PROVIDERS[provider],
                "bucketPath": _BUCKET_URLS[provider].format(region=region) + f"/{sid}/{bid}",
                # An IAM role (and its session) exists for a bucket on AWS only.
                "iamRoleArn": "arn:aws:iam::123456789012:role/backups" if aws else "",
                "iamRoleSessionName": "backup-session" if aws else "",
            },
        }
        if status != "in_progress":
            # An unfinished backup has no finishedAt at all (the field is absent, not null).
            backup["finishedAt"] = iso_ms(started + timedelta(seconds=duration))
        backups.append(backup)
    data["backups"][sid] = backups


def backup_id(service_id: str, hours: int) -> str:
    """The id of the seeded backup of ``service_id`` started ``hours`` before seeding."""
    return str(uuid.uuid5(_NAMESPACE, f"backup/{service_id}/{hours}"))


def scale_ids(index: int) -> tuple[str, str]:
    """(pipe name, pipe id) of the scale-seed pipe with 1-based ``index``."""
    return f"pipe-{index:05d}", str(uuid.uuid5(_NAMESPACE, f"pipe/{index}"))


def scale_service_id(index: int) -> str:
    """The id of scale-seed service ``bench-NN`` (1-based)."""
    return str(uuid.uuid5(_NAMESPACE, f"service/{index}"))


def add_scale_seed(data: dict[str, Any], now: datetime, count: int, services: int) -> None:
    """Add ``services`` running services and ``count`` pipes spread round-robin over them."""
    sids = [scale_service_id(i) for i in range(1, services + 1)]
    for i, sid in enumerate(sids, 1):
        tags = [{"key": "Environment", "value": "Benchmark"}]
        placement = PLACEMENTS[(i - 1) % len(PLACEMENTS)]
        _add_service(data, sid, f"bench-{i:02d}", "running", tags, placement, "production")
        _add_backups(data, sid, now, [(3, "done"), (27, "done")])
    pipes = data["pipes"]
    for index in range(1, count + 1):
        name, pid = scale_ids(index)
        kind = KINDS[(index - 1) % 4]
        sid = sids[(index - 1) % services]
        # Postgres pipes are Paused so that benchmarks can also edit table mappings.
        state = "Paused" if kind == "postgres" else "Running"
        if kind == "kafka":
            source = kafka(name, f"topic-{index:05d}", [])
        elif kind == "objectStorage":
            source = object_storage(name)
        elif kind == "kinesis":
            source = kinesis(name, f"stream-{index:05d}", "us-east-1")
        else:
            source = postgres(name, "app", [mapping(f"table_{index:05d}", [], [])])
        pipes[pid] = pipe(pid, sid, name, state, source, f"t_{index:05d}")
