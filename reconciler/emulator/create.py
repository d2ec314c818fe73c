"""Validating the lifecycle bodies, the rules across create-time fields, a new pipe's defaults.

The real service's description marks no create-time field required, yet a pipe cannot run
without some of them; the emulator refuses their absence with the 400 the service would give
for an unusable pipe. Which fields those are is *inferred* (the description is silent):

* every pipe: ``name``, ``source`` (exactly one kind) and ``destination``;
* kafka: ``format``, ``brokers``, ``topics``; credentials that fit ``authentication``
  (``iamRole`` for IAM_ROLE); a ``schemaRegistry`` for AvroConfluent and Protobuf; an
  ``offset.timestamp`` exactly when the strategy is ``from_timestamp``; IAM methods only for
  ``msk``, a ``{connectionString}`` only for (and always for) ``azureeventhub``;
* objectStorage: ``format``; ``url`` (``connectionString``, ``path`` and
  ``azureContainerName`` for ``azureblobstorage`` instead); the credential field of the
  authentication method, which must be one the storage type offers; ``queueUrl`` only for a
  continuous pipe;
* kinesis: ``format``, ``streamName``, ``region``; ``timestamp`` exactly for AT_TIMESTAMP;
  ``iamRole`` (IAM_ROLE) or ``accessKey`` (IAM_USER);
* postgres: ``host``, ``port``, ``database``, at least one table mapping, ``credentials``
  ``{username, password}`` (``basic``) or ``{username}`` plus ``iamRole`` (``iam_role``, only
  for the AWS-hosted types);
* destination: ``table`` (except for postgres, whose tables come from the mappings), and
  ``columns`` when the table is managed; ``database`` defaults to ``default``.

Absent optional fields get the service's defaults, so that a created pipe reads back complete.
"""

from __future__ import annotations

import uuid
from typing import Any

from reconciler.emulator.pipe_bodies import (
    OBJECT_STORAGE_METHODS,
    OBJECT_STORAGE_SECRET,
    PIPE_CREATE,
    POSTGRES_IAM_TYPES,
    SCALING,
    STATE_COMMAND,
)
from reconciler.emulator.protocol import ApiError
from reconciler.emulator.validation import (
    CREDENTIAL_SHAPES,
    PIPE_SETTINGS,
    Invalid,
    Rule,
    check_field_mappings,
    check_object_storage,
)


def _bad(message: str) -> ApiError:
    return ApiError(400, message)


def _validated(rule: Rule, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _bad("Request body must be a JSON object")
    try:
        result: dict[str, Any] = rule(body, "")
    except Invalid as exc:
        raise _bad(f"{exc.path} {exc.why}") from None
    return result


def validate_state_command(body: Any) -> str:
    """The command of a state PATCH body, or a 400."""
    command: str = _validated(STATE_COMMAND, body)["command"]
    return command


def validate_scaling(body: Any) -> dict[str, Any]:
    """The normalised scaling PATCH body (``null`` becomes the default), or a 400."""
    return _validated(SCALING, body)


def validate_pipe_create(body: Any) -> dict[str, Any]:
    """The normalised create body after every rule across fields, or a 400 naming the field."""
    result = _validated(PIPE_CREATE, body)
    [(kind, source)] = result["source"].items()
    {
        "kafka": _check_kafka,
        "objectStorage": _check_object_storage,
        "kinesis": _check_kinesis,
        "postgres": _check_postgres,
    }[kind](source)
    _check_destination(result, kind)
    return result


def _shape(credentials: dict[str, Any]) -> str:
    return "{" + ", ".join(sorted(credentials)) + "}"


def _check_kafka(kafka: dict[str, Any]) -> None:
    where = "source.kafka"
    kind = kafka.get("type", "kafka")
    method = kafka.get("authentication", "PLAIN")
    shapes = CREDENTIAL_SHAPES[method]
    credentials = kafka.get("credentials")
    if method in ("IAM_ROLE", "IAM_USER") and kind != "msk":
        raise _bad(f"{where}.authentication {method} is only available for type msk")
    if method == "IAM_ROLE":
        if not kafka.get("iamRole"):
            raise _bad(f"{where}.iamRole is required for authentication IAM_ROLE")
        if credentials is not None:
            raise _bad(f"{where}.credentials are not taken by authentication IAM_ROLE")
    elif credentials is None:
        raise _bad(f"{where}.credentials are required for authentication {method}")
    elif frozenset(credentials) not in shapes:
        accepted = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in shapes)
        raise _bad(
            f"{where}.credentials {_shape(credentials)} do not fit authentication {method} "
            f"(it takes {accepted})"
        )
    connection_string = isinstance(credentials, dict) and "connectionString" in credentials
    if kind == "azureeventhub" and not connection_string:
        raise _bad(f"{where}.credentials must be {{connectionString}} for type azureeventhub")
    if connection_string and kind != "azureeventhub":
        raise _bad(f"{where}.credentials {{connectionString}} is only for type azureeventhub")
    if kafka["format"] in ("AvroConfluent", "Protobuf") and "schemaRegistry" not in kafka:
        raise _bad(f"{where}.schemaRegistry is required for format {kafka['format']}")
    registry = kafka.get("schemaRegistry", {})
    if "authentication" in registry and "credentials" not in registry:
        raise _bad(f"{where}.schemaRegistry.credentials are required for authentication PLAIN")
    offset = kafka.get("offset", {})
    if offset.get("strategy") == "from_timestamp" and "timestamp" not in offset:
        raise _bad(f"{where}.offset.timestamp is required for strategy from_timestamp")
    if "timestamp" in offset and offset["strategy"] != "from_timestamp":
        raise _bad(f"{where}.offset.timestamp is only taken with strategy from_timestamp")


def _check_object_storage(source: dict[str, Any]) -> None:
    where = "source.objectStorage"
    kind = source.get("type", "s3")
    offered = OBJECT_STORAGE_METHODS[kind]
    method = source.get("authentication", offered[0])
    if method not in offered:
        raise _bad(
            f"{where}.authentication {method} is not available for type {kind} "
            f"(it offers {', '.join(offered)})"
        )
    needed = OBJECT_STORAGE_SECRET.get(method)
    for field in OBJECT_STORAGE_SECRET.values():
        given = source.get(field) is not None
        if field == needed and not given:
            raise _bad(f"{where}.{field} is required for authentication {method}")
        if field != needed and given:
            raise _bad(f"{where}.{field} is not taken by authentication {method}")
    if kind == "azureblobstorage":
        for field in ("path", "azureContainerName"):
            if source.get(field) is None:
                raise _bad(f"{where}.{field} is required for type azureblobstorage")
    elif "url" not in source:
        raise _bad(f"{where}.url is required for type {kind}")
    if source.get("queueUrl") is not None and not source.get("isContinuous", False):
        raise _bad(f"{where}.queueUrl is only taken when isContinuous is true")
    try:
        check_object_storage(source)
    except ApiError as err:
        raise _bad(err.message) from None


def _check_kinesis(source: dict[str, Any]) -> None:
    where = "source.kinesis"
    method = source.get("authentication", "IAM_USER" if "accessKey" in source else "IAM_ROLE")
    needed, other = ("iamRole", "accessKey") if method == "IAM_ROLE" else ("accessKey", "iamRole")
    if needed not in source:
        raise _bad(f"{where}.{needed} is required for authentication {method}")
    if other in source:
        raise _bad(f"{where}.{other} is not taken by authentication {method}")
    at_timestamp = source.get("iteratorType") == "AT_TIMESTAMP"
    if at_timestamp and "timestamp" not in source:
        raise _bad(f"{where}.timestamp is required for iteratorType AT_TIMESTAMP")
    if "timestamp" in source and not at_timestamp:
        raise _bad(f"{where}.timestamp is only taken with iteratorType AT_TIMESTAMP")


def _check_postgres(source: dict[str, Any]) -> None:
    where = "source.postgres"
    method = source.get("authentication", "basic")
    credentials = source.get("credentials")
    if credentials is None:
        raise _bad(f"{where}.credentials are required for authentication {method}")
    if method == "basic" and "password" not in credentials:
        raise _bad(f"{where}.credentials.password is required for authentication basic")
    if method == "iam_role":
        kind = source.get("type", "postgres")
        if kind not in POSTGRES_IAM_TYPES:
            raise _bad(
                f"{where}.authentication iam_role is only available for types "
                + ", ".join(POSTGRES_IAM_TYPES)
            )
        if "iamRole" not in source:
            raise _bad(f"{where}.iamRole is required for authentication iam_role")
        if "password" in credentials:
            raise _bad(f"{where}.credentials.password is not taken by authentication iam_role")
    elif "iamRole" in source:
        raise _bad(f"{where}.iamRole is only taken by authentication iam_role")
    mappings = source["tableMappings"]
    if not mappings:
        raise _bad(f"{where}.tableMappings must hold at least one table mapping")
    seen: set[tuple[str, str, str]] = set()
    targets: set[str] = set()
    for i, mapping in enumerate(mappings):
        key = (mapping["sourceSchemaName"], mapping["sourceTable"], mapping["targetTable"])
        if key in seen:
            raise _bad(f"{where}.tableMappings.{i} lists the same table mapping twice")
        if mapping["targetTable"] in targets:
            raise _bad(
                f"{where}.tableMappings.{i}.targetTable {mapping['targetTable']} "
                "is the target of another mapping"
            )
        seen.add(key)
        targets.add(mapping["targetTable"])


def _check_destination(body: dict[str, Any], kind: str) -> None:
    destination = body["destination"]
    columns = [c["name"] for c in destination.get("columns", [])]
    if kind != "postgres":
        if "table" not in destination:
            raise _bad("destination.table is required")
        if destination.get("managedTable") and not columns:
            raise _bad("destination.columns are required for a managed table")
    definition = destination.get("tableDefinition", {})
    if columns:
        known = set(columns)
        if len(known) != len(columns):
            raise _bad("destination.columns name the same column twice")
        engine = definition.get("engine", {})
        references = [
            ("tableDefinition.engine.versionColumnId", [engine.get("versionColumnId")]),
            ("tableDefinition.engine.columnIds", engine.get("columnIds", [])),
            ("tableDefinition.sortingKey", definition.get("sortingKey", [])),
        ]
        for where, names in references:
            for name in names:
                if name is not None and name not in known:
                    raise _bad(f"destination.{where} {name} is not a column of the table")
        check_field_mappings(body)


def new_pipe(body: dict[str, Any], service_id: str, state: str, now: str) -> dict[str, Any]:
    """The stored record of a validated create body, with the service's defaults filled in."""
    pipe_id = str(uuid.uuid4())
    [(kind, given)] = body["source"].items()
    source = {**_SOURCE_DEFAULTS[kind](pipe_id, given), **given}
    if kind == "postgres":
        source["settings"] = {**_postgres_settings(pipe_id), **given.get("settings", {})}
        source["tableMappings"] = [{**_MAPPING_DEFAULTS, **m} for m in given["tableMappings"]]
    destination = {"database": "default", "managedTable": False, **body["destination"]}
    if destination["managedTable"]:
        definition = destination.setdefault("tableDefinition", {})
        definition["engine"] = {"type": "MergeTree", **definition.get("engine", {})}
    return {
        "id": pipe_id,
        "serviceId": service_id,
        "name": body["name"],
        "state": state,
        "scaling": {**_defaults(SCALING), **body.get("scaling", {})},
        "source": {kind: source},
        "destination": destination,
        "fieldMappings": body.get("fieldMappings", []),
        "settings": {**_defaults(PIPE_SETTINGS), **body.get("settings", {})},
        "createdAt": now,
        "updatedAt": now,
    }


def _defaults(rule: Rule) -> dict[str, Any]:
    """The defaults of an object rule whose every field is ``Nullable``."""
    fields = rule.schema["properties"]
    return {key: schema["default"] for key, schema in fields.items()}


_MAPPING_DEFAULTS = {
    "excludedColumns": [],
    "useCustomSortingKey": False,
    "sortingKeys": [],
    "tableEngine": "ReplacingMergeTree",
}


def _postgres_settings(pipe_id: str) -> dict[str, Any]:
    slot = "pipe_" + pipe_id.replace("-", "")[:12]
    return {
        "syncIntervalSeconds": 60,
        "pullBatchSize": 100000,
        "publicationName": f"{slot}_pub",
        "replicationSlotName": f"{slot}_slot",
        "allowNullableColumns": False,
        "initialLoadParallelism": 4,
        "snapshotNumRowsPerPartition": 100000,
        "snapshotNumberOfParallelTables": 1,
        "enableFailoverSlots": False,
    }


def _kafka_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "kafka",
        "authentication": "PLAIN",
        "consumerGroup": f"pipe-{pipe_id}",
        "offset": {"strategy": "from_beginning"},
        "exactlyOnce": False,
        "caCertificate": "",
        "reversePrivateEndpointIds": [],
    }


def _object_storage_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    kind = given.get("type", "s3")
    return {
        "type": kind,
        "authentication": OBJECT_STORAGE_METHODS[kind][0],
        "compression": "auto",
        "isContinuous": False,
        "skipInitialLoad": False,
    }


def _kinesis_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "authentication": "IAM_USER" if "accessKey" in given else "IAM_ROLE",
        "iteratorType": "TRIM_HORIZON",
        "useEnhancedFanOut": False,
    }


def _postgres_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "postgres",
        "authentication": "basic",
        "tlsHost": None,
        "caCertificate": None,
        "disableTls": False,
        "skipCertVerification": False,
    }


_SOURCE_DEFAULTS = {
    "kafka": _kafka_defaults,
    "objectStorage": _object_storage_defaults,
    "kinesis": _kinesis_defaults,
    "postgres": _postgres_defaults,
}
