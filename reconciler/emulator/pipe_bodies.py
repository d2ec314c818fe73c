"""The bodies of the pipe lifecycle extensions: create, state command and scaling.

The enumerations and bounds are those of the real service's public API description (create-time
source fields per kind, destination table definition, scaling bounds); the rules are built with
``validation``'s combinators, so each carries the JSON Schema that ``/openapi.json`` shows.
Which fields a pipe cannot do without, and the rules across fields, live in ``create``.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.emulator.validation import (
    _ACCESS_KEY,
    _CREDENTIALS,
    _MAPPING_KEY,
    _MAPPING_KEY_NAMES,
    KAFKA_AUTHENTICATION,
    KAFKA_CREDENTIALS,
    OBJECT_STORAGE_AUTHENTICATION,
    PIPE_SETTINGS,
    TABLE_ENGINES,
    Invalid,
    Nullable,
    Rule,
    array,
    boolean,
    integer,
    number,
    obj,
    one_of,
    string,
    uuid_string,
)

KAFKA_TYPES = (
    "kafka",
    "redpanda",
    "msk",
    "gcmk",
    "confluent",
    "warpstream",
    "azureeventhub",
    "dokafka",
)
KAFKA_FORMATS = ("JSONEachRow", "Avro", "AvroConfluent", "Protobuf")
OFFSET_STRATEGIES = ("from_beginning", "from_latest", "from_timestamp")
OBJECT_STORAGE_TYPES = (
    "s3",
    "gcs",
    "dospaces",
    "azureblobstorage",
    "cloudflarer2",
    "ovhobjectstorage",
)
OBJECT_STORAGE_FORMATS = (
    "JSONEachRow",
    "JSONAsObject",
    "CSV",
    "CSVWithNames",
    "TabSeparated",
    "TabSeparatedWithNames",
    "Parquet",
    "Avro",
)
COMPRESSIONS = ("none", "gzip", "gz", "brotli", "br", "xz", "LZMA", "zstd", "auto")
KINESIS_FORMATS = ("JSONEachRow", "Avro", "AvroConfluent")
ITERATOR_TYPES = ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP")
KINESIS_AUTHENTICATION = ("IAM_ROLE", "IAM_USER")
POSTGRES_TYPES = (
    "postgres",
    "supabase",
    "neon",
    "alloydb",
    "planetscale",
    "rdspostgres",
    "aurorapostgres",
    "cloudsqlpostgres",
    "azurepostgres",
    "crunchybridge",
    "tigerdata",
)
POSTGRES_AUTHENTICATION = ("basic", "iam_role")
POSTGRES_IAM_TYPES = ("rdspostgres", "aurorapostgres")
REPLICATION_MODES = ("cdc", "snapshot", "cdc_only")
DESTINATION_ENGINES = ("MergeTree", "ReplacingMergeTree", "SummingMergeTree", "Null")
COMMANDS = ("start", "stop", "resync")

# Authentication methods each object storage type offers, the first being the default.
OBJECT_STORAGE_METHODS: dict[str, tuple[str, ...]] = {
    "s3": ("PUBLIC", "IAM_ROLE", "IAM_USER"),
    "gcs": ("PUBLIC", "IAM_USER", "SERVICE_ACCOUNT"),
    "dospaces": ("PUBLIC", "IAM_USER"),
    "cloudflarer2": ("PUBLIC", "IAM_USER"),
    "ovhobjectstorage": ("PUBLIC", "IAM_USER"),
    "azureblobstorage": ("CONNECTION_STRING",),
}
# The one credential field each authentication method reads (PUBLIC reads none).
OBJECT_STORAGE_SECRET = {
    "IAM_ROLE": "iamRole",
    "IAM_USER": "accessKey",
    "SERVICE_ACCOUNT": "serviceAccountKey",
    "CONNECTION_STRING": "connectionString",
}
_OFFSET_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def _timestamp() -> Rule:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str) or not _OFFSET_TIMESTAMP.fullmatch(value):
            raise Invalid(path, "must be a timestamp shaped YYYY-MM-DDTHH:MM")
        return value

    return Rule(check, {"type": "string", "pattern": f"^{_OFFSET_TIMESTAMP.pattern}$"})


def _single_kind(kinds: dict[str, Rule]) -> Rule:
    """An object holding exactly one of the named source kinds."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        for key in value:
            if key not in kinds:
                raise Invalid(f"{path}.{key}", "is not an allowed field", frozenset(kinds))
        if len(value) != 1:
            raise Invalid(path, "must hold exactly one source kind: " + ", ".join(kinds))
        [(kind, body)] = value.items()
        return {kind: kinds[kind](body, f"{path}.{kind}")}

    schema = {
        "type": "object",
        "properties": {kind: rule.schema for kind, rule in kinds.items()},
        "additionalProperties": False,
        "minProperties": 1,
        "maxProperties": 1,
    }
    return Rule(check, schema)


_SCHEMA_REGISTRY = obj(
    {
        "url": string(1),
        "authentication": string(enum=("PLAIN",)),
        "caCertificate": string(),
        "credentials": _CREDENTIALS,
    },
    required=("url",),
)
KAFKA_CREATE = obj(
    {
        "type": string(enum=KAFKA_TYPES),
        "format": string(enum=KAFKA_FORMATS),
        "brokers": string(1),
        "topics": string(1),
        "consumerGroup": string(1),
        "offset": obj(
            {"strategy": string(enum=OFFSET_STRATEGIES), "timestamp": _timestamp()},
            required=("strategy",),
        ),
        "schemaRegistry": _SCHEMA_REGISTRY,
        "exactlyOnce": boolean(),
        "authentication": string(enum=KAFKA_AUTHENTICATION),
        "credentials": KAFKA_CREDENTIALS,
        "iamRole": Nullable(string(), None),
        "caCertificate": Nullable(string(), None),
        "reversePrivateEndpointIds": array(uuid_string()),
    },
    required=("format", "brokers", "topics"),
)
OBJECT_STORAGE_CREATE = obj(
    {
        "type": string(enum=OBJECT_STORAGE_TYPES),
        "format": string(enum=OBJECT_STORAGE_FORMATS),
        "url": string(1),
        "delimiter": string(1),
        "compression": string(enum=COMPRESSIONS),
        "isContinuous": boolean(),
        "queueUrl": Nullable(string(1), None),
        "authentication": string(enum=OBJECT_STORAGE_AUTHENTICATION),
        "iamRole": Nullable(string(1), None),
        "accessKey": Nullable(_ACCESS_KEY, None),
        "connectionString": Nullable(string(1), None),
        "path": Nullable(string(1), None),
        "azureContainerName": Nullable(string(1), None),
        "serviceAccountKey": Nullable(string(1), None),
        "skipInitialLoad": boolean(),
        "startAfter": Nullable(string(1), None),
    },
    required=("format",),
)
KINESIS_CREATE = obj(
    {
        "format": string(enum=KINESIS_FORMATS),
        "streamName": string(1),
        "region": string(1),
        "iteratorType": string(enum=ITERATOR_TYPES),
        "timestamp": integer(0),
        "useEnhancedFanOut": boolean(),
        "authentication": string(enum=KINESIS_AUTHENTICATION),
        "iamRole": string(1),
        "accessKey": _ACCESS_KEY,
    },
    required=("format", "streamName", "region"),
)
_POSTGRES_SETTINGS = obj(
    {
        "syncIntervalSeconds": integer(1),
        "pullBatchSize": integer(1),
        "publicationName": string(1),
        "replicationSlotName": string(1),
        "allowNullableColumns": boolean(),
        "initialLoadParallelism": integer(1),
        "snapshotNumRowsPerPartition": integer(1),
        "snapshotNumberOfParallelTables": integer(1),
        "enableFailoverSlots": boolean(),
        "replicationMode": string(enum=REPLICATION_MODES),
    }
)
_TABLE_MAPPING = obj(
    {
        **_MAPPING_KEY,
        "excludedColumns": array(string()),
        "useCustomSortingKey": boolean(),
        "sortingKeys": array(string()),
        "tableEngine": string(enum=TABLE_ENGINES),
    },
    required=_MAPPING_KEY_NAMES,
)
POSTGRES_CREATE = obj(
    {
        "type": string(enum=POSTGRES_TYPES),
        "host": string(1),
        "port": integer(1, 65535),
        "database": string(1),
        "authentication": string(enum=POSTGRES_AUTHENTICATION),
        "credentials": one_of(
            ("{username, password}", _CREDENTIALS),
            ("{username}", obj({"username": string(1)}, required=("username",))),
        ),
        "iamRole": string(1),
        "tlsHost": Nullable(string(1), None),
        "caCertificate": Nullable(string(1), None),
        "disableTls": boolean(),
        "skipCertVerification": boolean(),
        "settings": _POSTGRES_SETTINGS,
        "tableMappings": array(_TABLE_MAPPING),
    },
    required=("host", "port", "database", "tableMappings"),
)
_COLUMN = obj({"name": string(1), "type": string(1)}, required=("name", "type"))
DESTINATION_CREATE = obj(
    {
        "database": string(1),
        "table": string(1),
        "managedTable": boolean(),
        "tableDefinition": obj(
            {
                "engine": obj(
                    {
                        "type": string(enum=DESTINATION_ENGINES),
                        "versionColumnId": string(1),
                        "columnIds": array(string(1)),
                    }
                ),
                "sortingKey": array(string(1)),
                "partitionBy": string(),
                "primaryKey": string(),
            }
        ),
        "columns": array(_COLUMN),
        "roles": array(string(1)),
    }
)
SCALING = obj(
    {
        "replicas": Nullable(integer(1, 40), 1),
        "replicaCpuMillicores": Nullable(integer(125, 2000), 125),
        "replicaMemoryGb": Nullable(number(0.5, 8), 0.5),
        "concurrency": Nullable(integer(0, 34), 0),
    }
)
PIPE_CREATE = obj(
    {
        "name": string(1, 255),
        "source": _single_kind(
            {
                "kafka": KAFKA_CREATE,
                "objectStorage": OBJECT_STORAGE_CREATE,
                "kinesis": KINESIS_CREATE,
                "postgres": POSTGRES_CREATE,
            }
        ),
        "destination": DESTINATION_CREATE,
        "fieldMappings": array(
            obj(
                {"sourceField": string(1), "destinationField": string(1)},
                required=("sourceField", "destinationField"),
            )
        ),
        "scaling": SCALING,
        "settings": PIPE_SETTINGS,
    },
    required=("name", "source", "destination"),
)
STATE_COMMAND = obj({"command": string(enum=COMMANDS)}, required=("command",))
