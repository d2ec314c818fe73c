"""The pipe records of the seeds: one builder per source kind, and the pipe around a source.

``pipe`` is a whole stored pipe (scaling, destination table with its columns, field mappings,
settings) around the source a builder makes: ``kafka``, ``object_storage``, ``kinesis`` or
``postgres`` (with ``mapping`` for each table it replicates). The values are those a seeded
pipe shows in every answer, so tests and example manifests written elsewhere can state them;
``seed`` decides which pipes exist, with which ids, on which service. Each builder returns a
literal dict (no deep copy of a template), which keeps a 10,000-pipe scale seed well under a
second.
"""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


# Seeded services and pipes were all created at CREATED; seeded pipes last changed at UPDATED.
CREATED = "2024-03-01T09:00:00.000Z"
UPDATED = "2024-06-15T12:30:00.000Z"


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


def pipe(pid: str, sid: str, name: str, state: str, source: dict[str, Any], table: str) -> Any:
    """A stored pipe around ``source`` (a builder's result), writing to ``table``."""
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
        "createdAt": CREATED,
        "updatedAt": UPDATED,
    }


def kafka(name: str, topic: str, endpoints: list[str]) -> dict[str, Any]:
    """A Kafka source (PLAIN) reading ``topic``, through the reverse private ``endpoints``."""
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


def object_storage(name: str) -> dict[str, Any]:
    """An S3 object storage source reading ``name``'s files continuously, by IAM role."""
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


def kinesis(name: str, stream: str, region: str) -> dict[str, Any]:
    """A Kinesis source reading ``stream`` in ``region``, by IAM role."""
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


def mapping(table: str, excluded: list[str], keys: list[str]) -> dict[str, Any]:
    """A table mapping of a database source (``public.table`` to ``table``)."""
    return {
        "sourceSchemaName": "public",
        "sourceTable": table,
        "targetTable": table,
        "excludedColumns": excluded,
        "useCustomSortingKey": bool(keys),
        "sortingKeys": keys,
        "tableEngine": "ReplacingMergeTree",
    }


def postgres(name: str, database: str, mappings: list[dict[str, Any]]) -> dict[str, Any]:
    """A Postgres source replicating ``database`` through ``mappings``."""
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
