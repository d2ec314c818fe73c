"""The database source kinds (postgres, mysql, mongodb, bigquery): bodies, mappings, defaults.

A database pipe copies tables: its source carries ``settings`` and ``tableMappings`` instead of
a destination table, it pauses rather than stops, it can be resynced, and its table mappings
change only while it is Paused (added and removed by key, never edited in place). The key of a
mapping differs per kind (``MAPPING_KEYS``). Create and patch bodies follow the contract's
``PipeMutate…Source`` and ``PipePatch…Source`` shapes (bigquery has no patch shape: its source
cannot be changed once created). In a patch, ``null`` for a connection field the pipe cannot
lack (host, port, database, uri) leaves it unchanged; for an optional one (a TLS host, a CA
certificate) it removes the field; for a setting with a default it restores the default.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.lifecycle import DATABASE_KINDS
from reconciler.emulator.pipe_rules import TABLE_ENGINES, USER_CREDENTIALS
from reconciler.emulator.validation import (
    ABSENT,
    KEEP,
    Nullable,
    Rule,
    array,
    boolean,
    integer,
    number,
    obj,
    one_of,
    string,
)

__all__ = ["DATABASE_KINDS"]

MAPPING_KEYS: dict[str, tuple[str, str, str]] = {
    "postgres": ("sourceSchemaName", "sourceTable", "targetTable"),
    "mysql": ("sourceSchemaName", "sourceTable", "targetTable"),
    "mongodb": ("sourceDatabaseName", "sourceCollection", "targetTable"),
    "bigquery": ("sourceDatasetName", "sourceTable", "targetTable"),
}
# What the service fills in for a mapping's optional fields, per kind.
_SORTED_DEFAULTS = {
    "excludedColumns": [],
    "useCustomSortingKey": False,
    "sortingKeys": [],
    "tableEngine": "ReplacingMergeTree",
}
MAPPING_DEFAULTS: dict[str, dict[str, Any]] = {
    "postgres": _SORTED_DEFAULTS,
    "mysql": _SORTED_DEFAULTS,
    "mongodb": {"tableEngine": "ReplacingMergeTree"},
    "bigquery": _SORTED_DEFAULTS,
}
LABELS = {"postgres": "Postgres", "mysql": "MySQL", "mongodb": "MongoDB", "bigquery": "BigQuery"}

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
MYSQL_TYPES = ("mysql", "rdsmysql", "auroramysql", "mariadb", "rdsmariadb")
# Only the AWS-hosted types can authenticate with an IAM role.
IAM_TYPES = {
    "postgres": ("rdspostgres", "aurorapostgres"),
    "mysql": ("rdsmysql", "auroramysql", "rdsmariadb"),
}
AUTHENTICATION = ("basic", "IAM_ROLE")
REPLICATION_MODES = ("cdc", "snapshot", "cdc_only")
READ_PREFERENCES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")

_SORTING = {
    "excludedColumns": array(string(), unique=True),
    "useCustomSortingKey": boolean(),
    "sortingKeys": array(string(), unique=True),
    "tableEngine": string(enum=TABLE_ENGINES),
}


def _key(kind: str) -> dict[str, Rule]:
    return {name: string(1) for name in MAPPING_KEYS[kind]}


MAPPINGS: dict[str, Rule] = {
    "postgres": obj(
        {**_key("postgres"), **_SORTING, "partitionKey": string(), "partitionByExpr": string()},
        required=MAPPING_KEYS["postgres"],
    ),
    "mysql": obj(
        {**_key("mysql"), **_SORTING, "partitionKey": string()}, required=MAPPING_KEYS["mysql"]
    ),
    "mongodb": obj(
        {**_key("mongodb"), "tableEngine": string(enum=TABLE_ENGINES)},
        required=MAPPING_KEYS["mongodb"],
    ),
    "bigquery": obj({**_key("bigquery"), **_SORTING}, required=MAPPING_KEYS["bigquery"]),
}


def _removal(kind: str, *extra: str) -> Rule:
    # A mapping to remove is named by its key; its other fields may be sent (or null) and
    # are ignored.
    fields = {name: Nullable(string(), KEEP) for name in extra}
    fields["tableEngine"] = Nullable(string(enum=TABLE_ENGINES), KEEP)
    return obj({**_key(kind), **fields}, required=MAPPING_KEYS[kind])


_REMOVALS = {
    "postgres": _removal("postgres", "partitionKey", "partitionByExpr"),
    "mysql": _removal("mysql", "partitionKey"),
    "mongodb": _removal("mongodb"),
}
_LOGIN = one_of(
    ("{username, password}", USER_CREDENTIALS),
    ("{username}", obj({"username": string(1)}, required=("username",))),
)
_SNAPSHOT = {
    "allowNullableColumns": boolean(),
    "initialLoadParallelism": integer(1),
    "snapshotNumRowsPerPartition": integer(1000),
    "snapshotNumberOfParallelTables": integer(1),
}
_TLS = {
    "tlsHost": string(1),
    "caCertificate": string(1),
    "disableTls": boolean(),
    "skipCertVerification": boolean(),
}

CREATE: dict[str, Rule] = {
    "postgres": obj(
        {
            "type": Nullable(string(enum=POSTGRES_TYPES), KEEP),
            "host": string(1),
            "port": integer(1, 65535),
            "database": string(1),
            "authentication": string(enum=AUTHENTICATION),
            "credentials": _LOGIN,
            "iamRole": string(1),
            **_TLS,
            "settings": obj(
                {
                    "syncIntervalSeconds": integer(1),
                    "pullBatchSize": integer(1),
                    "publicationName": string(1),
                    "replicationSlotName": string(1),
                    "replicationMode": string(enum=REPLICATION_MODES),
                    **_SNAPSHOT,
                    "enableFailoverSlots": boolean(),
                    "deleteOnMerge": boolean(),
                }
            ),
            "tableMappings": array(MAPPINGS["postgres"]),
        },
        required=("host", "port", "database", "tableMappings"),
    ),
    "mysql": obj(
        {
            "type": Nullable(string(enum=MYSQL_TYPES), KEEP),
            "host": string(1),
            "port": integer(1, 65535),
            "authentication": string(enum=AUTHENTICATION),
            "credentials": _LOGIN,
            "iamRole": string(1),
            **_TLS,
            "serverId": integer(1, 4294967295),
            "settings": obj(
                {
                    "syncIntervalSeconds": integer(1),
                    "pullBatchSize": integer(1),
                    "replicationMode": string(enum=REPLICATION_MODES),
                    "replicationMechanism": string(enum=("GTID", "FILE_POS")),
                    "useCompression": boolean(),
                    **_SNAPSHOT,
                    "deleteOnMerge": boolean(),
                },
                required=("replicationMode",),
            ),
            "tableMappings": array(MAPPINGS["mysql"]),
        },
        required=("host", "port", "settings", "tableMappings"),
    ),
    "mongodb": obj(
        {
            "credentials": USER_CREDENTIALS,
            "uri": string(1),
            "readPreference": string(enum=READ_PREFERENCES),
            **_TLS,
            "settings": obj(
                {
                    "syncIntervalSeconds": integer(1),
                    "pullBatchSize": integer(1),
                    "replicationMode": string(enum=REPLICATION_MODES),
                    "snapshotNumRowsPerPartition": integer(1000),
                    "snapshotNumberOfParallelTables": integer(1),
                    "deleteOnMerge": boolean(),
                    "useJsonNativeFormat": boolean(),
                },
                required=("replicationMode",),
            ),
            "tableMappings": array(MAPPINGS["mongodb"]),
        },
        required=("uri", "readPreference", "settings", "tableMappings"),
    ),
    "bigquery": obj(
        {
            "snapshotStagingPath": string(1),
            "settings": obj(
                {
                    "replicationMode": string(enum=("snapshot",)),
                    "allowNullableColumns": boolean(),
                    "initialLoadParallelism": number(1),
                    "snapshotNumRowsPerPartition": number(1),
                    "snapshotNumberOfParallelTables": number(1),
                }
            ),
            "tableMappings": array(MAPPINGS["bigquery"]),
            "credentials": obj({"serviceAccountFile": string(1)}, required=("serviceAccountFile",)),
        },
        required=("snapshotStagingPath", "tableMappings", "credentials"),
    ),
}

_PATCH_TLS = {
    "tlsHost": Nullable(string(1), ABSENT),
    "caCertificate": Nullable(string(1), ABSENT),
    "disableTls": Nullable(boolean(), False),
    "skipCertVerification": Nullable(boolean(), False),
}
_PATCH_SYNC: dict[str, Rule] = {
    "syncIntervalSeconds": Nullable(integer(1), 60),
    "pullBatchSize": Nullable(integer(1), 100000),
}


def _edits(kind: str) -> dict[str, Rule]:
    return {
        "tableMappingsToAdd": array(MAPPINGS[kind]),
        "tableMappingsToRemove": array(_REMOVALS[kind]),
    }


PATCH: dict[str, Rule] = {
    "postgres": obj(
        {
            "credentials": USER_CREDENTIALS,
            "host": Nullable(string(1), KEEP),
            "port": Nullable(integer(1, 65535), KEEP),
            "database": Nullable(string(1), KEEP),
            **_PATCH_TLS,
            "settings": obj(_PATCH_SYNC),
            **_edits("postgres"),
        }
    ),
    "mysql": obj(
        {
            "credentials": USER_CREDENTIALS,
            "host": Nullable(string(1), KEEP),
            "port": Nullable(integer(1, 65535), KEEP),
            "authentication": Nullable(string(enum=AUTHENTICATION), KEEP),
            "iamRole": Nullable(string(1), ABSENT),
            **_PATCH_TLS,
            "serverId": Nullable(integer(1, 4294967295), ABSENT),
            "settings": obj({**_PATCH_SYNC, "useCompression": Nullable(boolean(), False)}),
            **_edits("mysql"),
        },
        required=("host", "port"),
    ),
    "mongodb": obj(
        {
            "credentials": USER_CREDENTIALS,
            "uri": Nullable(string(1), KEEP),
            "readPreference": Nullable(string(enum=READ_PREFERENCES), KEEP),
            **_PATCH_TLS,
            "settings": obj(_PATCH_SYNC),
            **_edits("mongodb"),
        },
        required=("uri", "readPreference"),
    ),
}


def settings_defaults(kind: str, pipe_id: str) -> dict[str, Any]:
    """The settings the service fills in for a new database pipe of ``kind``."""
    snapshot = {
        "allowNullableColumns": False,
        "initialLoadParallelism": 4,
        "snapshotNumRowsPerPartition": 100000,
        "snapshotNumberOfParallelTables": 1,
    }
    if kind == "bigquery":
        return {"replicationMode": "snapshot", **snapshot}
    sync = {"syncIntervalSeconds": 60, "pullBatchSize": 100000, "replicationMode": "cdc"}
    if kind == "mongodb":
        return {**sync, "snapshotNumRowsPerPartition": 100000, "snapshotNumberOfParallelTables": 1}
    if kind == "mysql":
        return {**sync, "replicationMechanism": "GTID", "useCompression": False, **snapshot}
    slot = "pipe_" + pipe_id.replace("-", "")[:12]
    return {
        **sync,
        "publicationName": f"{slot}_pub",
        "replicationSlotName": f"{slot}_slot",
        **snapshot,
        "enableFailoverSlots": False,
    }


def source_defaults(kind: str) -> dict[str, Any]:
    """The connection fields the service fills in for a new database pipe of ``kind``."""
    tls = {"disableTls": False, "skipCertVerification": False}
    if kind == "postgres":
        return {"type": "postgres", "authentication": "basic", **tls}
    if kind == "mysql":
        return {"type": "mysql", "authentication": "basic", **tls}
    if kind == "mongodb":
        return tls
    return {}


def check_create(kind: str, source: dict[str, Any]) -> str | None:
    """The first rule across a database source's create fields it breaks, as a message."""
    where = f"source.{kind}"
    if kind in IAM_TYPES:
        problem = _check_login(kind, source)
        if problem:
            return problem
    mappings = source["tableMappings"]
    if not mappings:
        return f"{where}.tableMappings must hold at least one table mapping"
    seen: set[tuple[str, ...]] = set()
    targets: set[str] = set()
    for i, mapping in enumerate(mappings):
        key = tuple(mapping[name] for name in MAPPING_KEYS[kind])
        if key in seen:
            return f"{where}.tableMappings.{i} lists the same table mapping twice"
        if mapping["targetTable"] in targets:
            return (
                f"{where}.tableMappings.{i}.targetTable {mapping['targetTable']} "
                "is the target of another mapping"
            )
        seen.add(key)
        targets.add(mapping["targetTable"])
    return None


def _check_login(kind: str, source: dict[str, Any]) -> str | None:
    where = f"source.{kind}"
    method = source.get("authentication", "basic")
    credentials = source.get("credentials")
    if credentials is None:
        return f"{where}.credentials are required for authentication {method}"
    if method == "basic" and "password" not in credentials:
        return f"{where}.credentials.password is required for authentication basic"
    if method == "IAM_ROLE":
        if source.get("type", kind) not in IAM_TYPES[kind]:
            return f"{where}.authentication IAM_ROLE is only available for types " + ", ".join(
                IAM_TYPES[kind]
            )
        if "iamRole" not in source:
            return f"{where}.iamRole is required for authentication IAM_ROLE"
        if "password" in credentials:
            return f"{where}.credentials.password is not taken by authentication IAM_ROLE"
    elif "iamRole" in source:
        return f"{where}.iamRole is only taken by authentication IAM_ROLE"
    return None
