"""The bodies of the pipe lifecycle extensions: create, state command and scaling.

The enumerations and bounds are those of the real service's public API description (create-time
source fields per kind, destination table definition, scaling bounds); the rules are built with
``validation``'s combinators, so each carries the JSON Schema that ``/openapi.json`` shows.
Which fields a pipe cannot do without, and the rules across fields, live in ``create``.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.emulator.databases import CREATE as DATABASE_CREATE
from reconciler.emulator.pipe_rules import (
    ACCESS_KEY,
    KAFKA_AUTHENTICATION,
    KAFKA_CREDENTIALS,
    PIPE_SETTINGS,
    USER_CREDENTIALS,
    object_storage_authentication,
)
from reconciler.emulator.validation import (
    Invalid,
    Nullable,
    Rule,
    array,
    boolean,
    integer,
    number,
    obj,
    string,
    uuid_string,
)

__all__: list[str] = []


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
PUBSUB_FORMATS = ("JSONEachRow", "Avro", "Protobuf")
SEEK_TYPES = ("latest", "earliest", "timestamp")
DESTINATION_ENGINES = ("MergeTree", "ReplacingMergeTree", "SummingMergeTree", "Null")
COMMANDS = ("start", "stop", "resync")

# Authentication methods each object storage type offers. A public bucket is read with no
# authentication at all (the field left out): every type but azureblobstorage offers that,
# and azureblobstorage defaults to its one method.
OBJECT_STORAGE_METHODS: dict[str, tuple[str, ...]] = {
    "s3": ("IAM_ROLE", "IAM_USER"),
    "gcs": ("IAM_USER", "SERVICE_ACCOUNT"),
    "dospaces": ("IAM_USER",),
    "cloudflarer2": ("IAM_USER",),
    "ovhobjectstorage": ("IAM_USER",),
    "azureblobstorage": ("CONNECTION_STRING",),
}
# The one credential field each authentication method reads (a public bucket reads none).
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


def single_kind(kinds: dict[str, Rule], samples_flag: bool = True) -> Rule:
    """An object holding exactly one of the named source kinds (and maybe ``validateSamples``).

    A kind given as ``null`` counts as not given (the contract types each kind nullable).
    """
    flag = boolean()

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        known = frozenset(kinds) | ({"validateSamples"} if samples_flag else set())
        for key in value:
            if key not in known:
                raise Invalid(f"{path}.{key}", "is not an allowed field", known)
        result: dict[str, Any] = {}
        if "validateSamples" in value:
            result["validateSamples"] = flag(value["validateSamples"], f"{path}.validateSamples")
        present = [k for k in kinds if value.get(k) is not None]
        if len(present) != 1:
            raise Invalid(path, "must hold exactly one source kind: " + ", ".join(kinds))
        [kind] = present
        return {kind: kinds[kind](value[kind], f"{path}.{kind}"), **result}

    branches = [{"required": [kind], "properties": {kind: {"type": "object"}}} for kind in kinds]
    properties = {kind: {"anyOf": [rule.schema, {"type": "null"}]} for kind, rule in kinds.items()}
    if samples_flag:
        properties["validateSamples"] = flag.schema
    schema = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "oneOf": branches,
    }
    return Rule(check, schema)


_SCHEMA_REGISTRY = obj(
    {
        "url": string(1),
        "authentication": string(enum=("PLAIN",)),
        "caCertificate": Nullable(string(), None),
        "credentials": USER_CREDENTIALS,
    },
    required=("url",),
)
# In a create body, ``null`` stands for "not given": the service's default applies.
KAFKA_CREATE = obj(
    {
        "type": string(enum=KAFKA_TYPES),
        "format": string(enum=KAFKA_FORMATS),
        "brokers": string(1),
        "topics": string(1),
        "consumerGroup": Nullable(string(1), None),
        "offset": Nullable(
            obj(
                {
                    "strategy": string(enum=OFFSET_STRATEGIES),
                    "timestamp": Nullable(_timestamp(), None),
                },
                required=("strategy",),
            ),
            None,
        ),
        "schemaRegistry": Nullable(_SCHEMA_REGISTRY, None),
        "exactlyOnce": Nullable(boolean(), None),
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
        "delimiter": Nullable(string(1), None),
        "compression": Nullable(string(enum=COMPRESSIONS), None),
        "isContinuous": Nullable(boolean(), None),
        "queueUrl": Nullable(string(1), None),
        "authentication": Nullable(object_storage_authentication(), None),
        "iamRole": Nullable(string(1), None),
        "accessKey": Nullable(ACCESS_KEY, None),
        "connectionString": Nullable(string(1), None),
        "path": Nullable(string(1), None),
        "azureContainerName": Nullable(string(1), None),
        "serviceAccountKey": Nullable(string(1), None),
        "skipInitialLoad": Nullable(boolean(), None),
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
        "timestamp": Nullable(integer(0), None),
        "useEnhancedFanOut": Nullable(boolean(), None),
        "authentication": string(enum=KINESIS_AUTHENTICATION),
        "iamRole": Nullable(string(1), None),
        "accessKey": Nullable(ACCESS_KEY, None),
    },
    required=("format", "streamName", "region"),
)
SERVICE_ACCOUNT = obj({"serviceAccountFile": string(1)}, required=("serviceAccountFile",))


def _date_time() -> Rule:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str) or not _DATE_TIME.fullmatch(value):
            raise Invalid(path, "must be a date-time like 2024-03-01T00:00:00Z")
        return value

    return Rule(check, {"type": "string", "format": "date-time"})


_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
PUBSUB_CREATE = obj(
    {
        "format": string(enum=PUBSUB_FORMATS),
        "projectId": string(1),
        "topic": string(1),
        "authentication": string(enum=("SERVICE_ACCOUNT",)),
        "seekType": string(enum=SEEK_TYPES),
        "seekTimestamp": Nullable(_date_time(), None),
        "filter": Nullable(string(0, 256), None),
        "enableOrdering": Nullable(boolean(), None),
        "ackDeadline": Nullable(integer(10, 600), None),
        "serviceAccountKey": SERVICE_ACCOUNT,
    },
    required=("format", "projectId", "topic", "authentication", "seekType", "serviceAccountKey"),
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
                        "versionColumnId": Nullable(string(1), None),
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
# A create states the scaling it wants: no null there (the contract's PipeScaling has none).
SCALING_CREATE = obj(
    {
        "replicas": integer(1, 40),
        "replicaCpuMillicores": integer(125, 2000),
        "replicaMemoryGb": number(0.5, 8),
        "concurrency": integer(0, 34),
    }
)
PIPE_CREATE = obj(
    {
        "name": string(1, 255),
        "source": single_kind(
            {
                "kafka": KAFKA_CREATE,
                "objectStorage": OBJECT_STORAGE_CREATE,
                "kinesis": KINESIS_CREATE,
                "pubsub": PUBSUB_CREATE,
                **DATABASE_CREATE,
            }
        ),
        "destination": DESTINATION_CREATE,
        "fieldMappings": array(
            obj(
                {"sourceField": string(1), "destinationField": string(1)},
                required=("sourceField", "destinationField"),
            )
        ),
        "scaling": SCALING_CREATE,
        "settings": PIPE_SETTINGS,
    },
    required=("name", "source", "destination"),
)
STATE_COMMAND = obj({"command": string(enum=COMMANDS)}, required=("command",))
