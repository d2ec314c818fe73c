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
* pubsub: ``seekTimestamp`` exactly for seekType ``timestamp`` (the rest the contract requires);
* the database kinds (postgres, mysql, mongodb, bigquery): see ``databases`` — at least one
  table mapping, credentials fitting ``authentication`` (``IAM_ROLE`` only for the AWS-hosted
  types, with ``iamRole``);
* destination: ``table`` (except for a database pipe, whose tables come from the mappings), and
  ``columns`` when the table is managed; ``database`` defaults to ``default``; ``fieldMappings``
  are optional (without them each source field goes to the column of its name), and when given
  every destination column is mapped once.

A ``null`` create field counts as not given. Absent optional fields get the service's
defaults, so that a created pipe reads back complete; a field that does not apply (a public
bucket's authentication, a TLS host not given) stays absent.
"""

from __future__ import annotations

import uuid
from typing import Any

from reconciler.emulator import databases
from reconciler.emulator.lifecycle import DATABASE_KINDS
from reconciler.emulator.pipe_bodies import (
    OBJECT_STORAGE_METHODS,
    OBJECT_STORAGE_SECRET,
    PIPE_CREATE,
    SCALING,
    STATE_COMMAND,
)
from reconciler.emulator.pipe_rules import (
    CREDENTIAL_SHAPES,
    PIPE_SETTINGS,
    check_field_mappings,
    check_object_storage,
)
from reconciler.emulator.protocol import ApiError
from reconciler.emulator.validation import KEEP, Invalid, Rule

__all__: list[str] = []


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
    kind = next(k for k in result["source"] if k != "validateSamples")
    # null in a create body means "not given": drop it, and the service's default applies.
    source = {k: v for k, v in result["source"][kind].items() if v is not None and v is not KEEP}
    result["source"][kind] = source
    if kind in DATABASE_KINDS:
        problem = databases.check_create(kind, source)
        if problem:
            raise _bad(problem)
    else:
        {
            "kafka": _check_kafka,
            "objectStorage": _check_object_storage,
            "kinesis": _check_kinesis,
            "pubsub": _check_pubsub,
        }[kind](source)
    _check_destination(result, kind)
    return result


def check_stream_source(kind: str, source: dict[str, Any]) -> None:
    """The rules across a kafka or kinesis source's fields (a 400 naming the first broken)."""
    {"kafka": _check_kafka, "kinesis": _check_kinesis}[kind](source)


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
    # Without authentication the bucket is read as a public one (azure offers no such thing).
    method = source.get("authentication", offered[0] if kind == "azureblobstorage" else None)
    if method is not None and method not in offered:
        raise _bad(
            f"{where}.authentication {method} is not available for type {kind} "
            f"(it offers {', '.join(offered)})"
        )
    needed = OBJECT_STORAGE_SECRET.get(method or "")
    for field in OBJECT_STORAGE_SECRET.values():
        given = source.get(field) is not None
        if field == needed and not given:
            raise _bad(f"{where}.{field} is required for authentication {method}")
        if field != needed and given:
            taker = f"authentication {method}" if method else "a public bucket"
            raise _bad(f"{where}.{field} is not taken by {taker}")
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


def _check_pubsub(source: dict[str, Any]) -> None:
    where = "source.pubsub"
    at_timestamp = source["seekType"] == "timestamp"
    if at_timestamp and "seekTimestamp" not in source:
        raise _bad(f"{where}.seekTimestamp is required for seekType timestamp")
    if "seekTimestamp" in source and not at_timestamp:
        raise _bad(f"{where}.seekTimestamp is only taken with seekType timestamp")


def _check_destination(body: dict[str, Any], kind: str) -> None:
    destination = body["destination"]
    columns = [c["name"] for c in destination.get("columns", [])]
    if kind not in DATABASE_KINDS:
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
    if columns and "fieldMappings" in body:
        check_field_mappings(body)


def new_pipe(body: dict[str, Any], service_id: str, state: str, now: str) -> dict[str, Any]:
    """The stored record of a validated create body, with the service's defaults filled in."""
    pipe_id = str(uuid.uuid4())
    kind = next(k for k in body["source"] if k != "validateSamples")
    given = body["source"][kind]
    if kind in DATABASE_KINDS:
        source = {**databases.source_defaults(kind), **given}
        defaults = databases.settings_defaults(kind, pipe_id)
        source["settings"] = {**defaults, **given.get("settings", {})}
        mapping_defaults = databases.MAPPING_DEFAULTS[kind]
        source["tableMappings"] = [{**mapping_defaults, **m} for m in given["tableMappings"]]
    else:
        source = {**_SOURCE_DEFAULTS[kind](pipe_id, given), **given}
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
        # Without mappings, source fields go to the columns of the same name.
        "fieldMappings": body.get("fieldMappings", []),
        "settings": {**_defaults(PIPE_SETTINGS), **body.get("settings", {})},
        "createdAt": now,
        "updatedAt": now,
    }


def _defaults(rule: Rule) -> dict[str, Any]:
    """The defaults of an object rule whose every field is ``Nullable``."""
    fields = rule.schema["properties"]
    return {key: schema["default"] for key, schema in fields.items()}


def _kafka_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "kafka",
        "authentication": "PLAIN",
        "consumerGroup": f"pipe-{pipe_id}",
        "offset": {"strategy": "from_beginning"},
        "exactlyOnce": False,
        "reversePrivateEndpointIds": [],
    }


def _object_storage_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    kind = given.get("type", "s3")
    defaults: dict[str, Any] = {
        "type": kind,
        "compression": "auto",
        "isContinuous": False,
        "skipInitialLoad": False,
    }
    if kind == "azureblobstorage":
        defaults["authentication"] = OBJECT_STORAGE_METHODS[kind][0]
    return defaults


def _kinesis_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {
        "authentication": "IAM_USER" if "accessKey" in given else "IAM_ROLE",
        "iteratorType": "TRIM_HORIZON",
        "useEnhancedFanOut": False,
    }


def _pubsub_defaults(pipe_id: str, given: dict[str, Any]) -> dict[str, Any]:
    return {"enableOrdering": False, "ackDeadline": 10}


_SOURCE_DEFAULTS = {
    "kafka": _kafka_defaults,
    "objectStorage": _object_storage_defaults,
    "kinesis": _kinesis_defaults,
    "pubsub": _pubsub_defaults,
}
