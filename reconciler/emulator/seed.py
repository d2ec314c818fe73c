"""The deterministic demo seed and the scale seed used by benchmarks.

The demo organization, its three services, five pipes (one of each source kind, two postgres:
one Paused and one Running), two reverse private endpoints and the backups have fixed uuids,
because example manifests and tests written elsewhere reference them. The second organization
(another key's) has one service, ``analytics`` on GCP, and no pipes: the environments example
creates its own pipe there, as a staging organization would have. Creation times are fixed;
only backup times are relative to the clock at seed time, so that a backup-freshness check has
something meaningful to say (analytics fresh, staging stale with a newer failure).

The scale seed adds S ``bench-NN`` services and N ``pipe-NNNNN`` pipes spread round-robin over
them, cycling through the four source kinds, with uuid5 ids derived from the index. Pipes are
built from literal dicts rather than deep copies of a template, which keeps 10,000 pipes well
under a second.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from reconciler.emulator.protocol import DEMO_ORG_ID, OTHER_ORG_ID, iso_ms

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
_CREATED = "2024-03-01T09:00:00.000Z"
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
_UPDATED = "2024-06-15T12:30:00.000Z"
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
        "createdAt": _CREATED,
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


def _settings(kind: str) -> dict[str, Any]:
    streaming = kind in ("kafka", "kinesis")
    return {
        "streaming_max_insert_wait_ms": 5000,
        "object_storage_concurrency": 8,
        "object_storage_polling_interval_ms": 30000 if not streaming else 5000,
        "object_storage_max_insert_bytes": 1073741824,
        "object_storage_max_file_count": 1000,
        "engine_max_threads": 4,
        "engine_max_insert_threads": 2,
        "engine_min_insert_block_size_bytes": 268435456,
        "engine_max_download_threads": 4,
        "engine_parallel_distributed_insert_select": 0,
        "object_storage_use_cluster_function": False,
        "engine_parallel_view_processing": False,
    }


def _pipe(pid: str, sid: str, name: str, state: str, source: dict[str, Any], table: str) -> Any:
    return {
        "id": pid,
        "serviceId": sid,
        "name": name,
        "state": state,
        "scaling": {
            "replicas": 2,
            "concurrency": 2,
            "replicaCpuMillicores": 500,
            "replicaMemoryGb": 2,
        },
        "source": source,
        "destination": {
            "database": "sales" if table == "orders" else "default",
            "table": table,
            "managedTable": True,
            "tableDefinition": {
                "engine": {"versionColumnId": "updated_at", "columnIds": ["id"]},
                "sortingKey": ["id"],
                "partitionBy": "toYYYYMM(created_at)",
                "primaryKey": "id",
            },
            "columns": [
                {"name": "id", "type": "String"},
                {"name": "amount", "type": "Decimal(18, 2)"},
                {"name": "created_at", "type": "DateTime64(3)"},
                {"name": "updated_at", "type": "DateTime64(3)"},
            ],
        },
        "fieldMappings": [
            {"sourceField": "id", "destinationField": "id"},
            {"sourceField": "amount", "destinationField": "amount"},
            {"sourceField": "ts", "destinationField": "created_at"},
            {"sourceField": "updated", "destinationField": "updated_at"},
        ],
        "settings": _settings(next(iter(source))),
        "createdAt": _CREATED,
        "updatedAt": _UPDATED,
    }


def _kafka(name: str, topic: str, endpoints: list[str]) -> dict[str, Any]:
    return {
        "kafka": {
            "type": "kafka",
            "format": "JSONEachRow",
            "authentication": "PLAIN",
            "brokers": "broker-1.example.com:9092,broker-2.example.com:9092",
            "topics": topic,
            "consumerGroup": f"reconcile-{name}",
            "iamRole": f"arn:aws:iam::123456789012:role/pipe-{name}",
            "offset": {"strategy": "from_timestamp", "timestamp": "2024-03-01T00:00"},
            "schemaRegistry": {"url": "https://schema-registry.example.com", "caCertificate": ""},
            "caCertificate": "",
            "reversePrivateEndpointIds": endpoints,
        }
    }


def _object_storage(name: str) -> dict[str, Any]:
    return {
        "objectStorage": {
            "type": "s3",
            "format": "JSONEachRow",
            "authentication": "IAM_ROLE",
            "skipInitialLoad": False,
            "startAfter": None,
            "url": f"https://storage.example.com/{name}/**/*.json.gz",
            "delimiter": ",",
            "compression": "gzip",
            "isContinuous": True,
            "queueUrl": f"https://queue.example.com/123456789012/{name}-notifications",
            "iamRole": f"arn:aws:iam::123456789012:role/pipe-{name}",
        }
    }


def _kinesis(name: str, stream: str, region: str) -> dict[str, Any]:
    return {
        "kinesis": {
            "format": "JSONEachRow",
            "authentication": "IAM_ROLE",
            "streamName": stream,
            "region": region,
            "useEnhancedFanOut": False,
            "iteratorType": "TRIM_HORIZON",
            "timestamp": 1709251200,
            "iamRole": f"arn:aws:iam::123456789012:role/pipe-{name}",
        }
    }


def _mapping(table: str, excluded: list[str], keys: list[str]) -> dict[str, Any]:
    return {
        "sourceSchemaName": "public",
        "sourceTable": table,
        "targetTable": table,
        "excludedColumns": excluded,
        "useCustomSortingKey": bool(keys),
        "sortingKeys": keys,
        "tableEngine": "ReplacingMergeTree",
    }


def _postgres(name: str, database: str, mappings: list[dict[str, Any]]) -> dict[str, Any]:
    slot = name.replace("-", "_")
    return {
        "postgres": {
            "type": "postgres",
            "authentication": "basic",
            "host": "db.example.com",
            "disableTls": False,
            "skipCertVerification": False,
            "port": 5432,
            "database": database,
            "settings": {
                "syncIntervalSeconds": 60,
                "pullBatchSize": 10000,
                "publicationName": f"{slot}_pub",
                "replicationSlotName": f"{slot}_slot",
                "allowNullableColumns": True,
                "initialLoadParallelism": 4,
                "snapshotNumRowsPerPartition": 100000,
                "snapshotNumberOfParallelTables": 2,
                "enableFailoverSlots": False,
            },
            "tableMappings": mappings,
        }
    }


def _add_demo_pipes(data: dict[str, Any]) -> None:
    pipes = data["pipes"]
    pipes[KAFKA_PIPE] = _pipe(
        KAFKA_PIPE,
        ANALYTICS,
        "orders",
        "Running",
        _kafka("orders", "orders", [ENDPOINT_READY]),
        "orders",
    )
    pipes[OBJECT_STORAGE_PIPE] = _pipe(
        OBJECT_STORAGE_PIPE,
        ANALYTICS,
        "events-archive",
        "Running",
        _object_storage("events"),
        "events",
    )
    pipes[KINESIS_PIPE] = _pipe(
        KINESIS_PIPE,
        STAGING,
        "clickstream",
        "Running",
        _kinesis("clickstream", "clickstream", "us-east-1"),
        "clickstream",
    )
    pipes[KINESIS_PIPE]["scaling"]["concurrency"] = 0  # auto-scaled
    customers = [
        _mapping("customers", ["ssn"], ["customer_id"]),
        _mapping("addresses", [], []),
    ]
    pipes[POSTGRES_PIPE] = _pipe(
        POSTGRES_PIPE,
        ANALYTICS,
        "customers-cdc",
        "Paused",
        _postgres("customers-cdc", "crm", customers),
        "customers",
    )
    for pid, name, method in (
        (KAFKA_IAM_USER_PIPE, "payments", "IAM_USER"),
        (KAFKA_CONNECTION_STRING_PIPE, "telemetry", "PLAIN"),
        (KAFKA_MUTUAL_TLS_PIPE, "audit-log", "MUTUAL_TLS"),
    ):
        source = _kafka(name, name, [])
        source["kafka"]["authentication"] = method
        pipes[pid] = _pipe(pid, ANALYTICS, name, "Running", source, name.replace("-", "_"))
    billing = [_mapping("invoices", [], ["invoice_id"]), _mapping("payments", ["card_number"], [])]
    pipes[POSTGRES_RUNNING_PIPE] = _pipe(
        POSTGRES_RUNNING_PIPE,
        STAGING,
        "billing-cdc",
        "Running",
        _postgres("billing-cdc", "billing", billing),
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
            source = _kafka(name, f"topic-{index:05d}", [])
        elif kind == "objectStorage":
            source = _object_storage(name)
        elif kind == "kinesis":
            source = _kinesis(name, f"stream-{index:05d}", "us-east-1")
        else:
            source = _postgres(name, "app", [_mapping(f"table_{index:05d}", [], [])])
        pipes[pid] = _pipe(pid, sid, name, state, source, f"t_{index:05d}")
