"""Request-body validation, written independently of the reconciler's JSON Schemas.

A tiny combinator language describes each accepted body: ``obj`` rejects unknown fields and
checks required ones, ``integer`` accepts integral JSON numbers but not booleans, and so on.
Each validator returns the normalised value (integral floats become ints) or raises
``Invalid`` with the dotted path of the offending field. Each validator also carries the JSON
Schema of what it accepts (``Rule.schema``): the emulator's OpenAPI description
(``reconciler.emulator.openapi``) is built from these same objects, so the document and the
validation cannot drift apart. The public functions turn ``Invalid`` into
the error shape of their interface: ``BAD_REQUEST: settings.x must be …`` for management and
``Body validation failed: tiles.0.x: …`` for dashboards. The bounds are the real service's
(DESIGN.md, "API facts"), so what the server would reject is rejected here too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from reconciler.emulator.protocol import ApiError

Check = Callable[[Any, str], Any]


class Rule:
    """A validator: call it with ``(value, path)``; ``schema`` is the JSON Schema it enforces."""

    __slots__ = ("check", "schema")

    def __init__(self, check: Check, schema: dict[str, Any]) -> None:
        self.check = check
        self.schema = schema

    def __call__(self, value: Any, path: str) -> Any:
        return self.check(value, path)


Validator = Rule

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class Invalid(Exception):
    """A field failed validation: ``path`` is dotted (``tiles.0.x``), ``why`` a short reason."""

    def __init__(self, path: str, why: str, fields: frozenset[str] = frozenset()):
        super().__init__(f"{path} {why}")
        self.path = path or "body"
        self.why = why
        self.fields = fields  # the fields of the object that failed (to pick a oneOf branch)


def _join(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def string(min_len: int = 0, max_len: int | None = None, enum: Iterable[str] = ()) -> Validator:
    """A string, optionally length-bounded or restricted to an enumeration."""
    allowed = tuple(enum)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise Invalid(path, "must be a string")
        if allowed and value not in allowed:
            raise Invalid(path, "must be one of " + ", ".join(allowed))
        if len(value) < min_len or (max_len is not None and len(value) > max_len):
            if max_len is None:
                raise Invalid(path, f"must be at least {min_len} characters long")
            raise Invalid(path, f"must be between {min_len} and {max_len} characters long")
        return value

    schema: dict[str, Any] = {"type": "string"}
    if allowed:
        schema["enum"] = list(allowed)
    if min_len:
        schema["minLength"] = min_len
    if max_len is not None:
        schema["maxLength"] = max_len
    return Rule(check, schema)


def uuid_string() -> Validator:
    """A string in uuid form."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str) or not _UUID.fullmatch(value):
            raise Invalid(path, "must be a uuid string")
        return value

    return Rule(check, {"type": "string", "pattern": f"^{_UUID.pattern}$"})


def integer(lo: int | None = None, hi: int | None = None) -> Validator:
    """An integral JSON number (``5000.0`` is accepted as 5000; booleans are not numbers)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be an integer")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise Invalid(path, "must be an integer")
            value = int(value)
        _bounds(value, lo, hi, path)
        return value

    return Rule(check, _bounded({"type": "integer"}, lo, hi))


def number(lo: float | None = None, hi: float | None = None) -> Validator:
    """Any finite JSON number (not a boolean)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise Invalid(path, "must be a finite number")
        _bounds(value, lo, hi, path)
        return value

    return Rule(check, _bounded({"type": "number"}, lo, hi))


def _bounded(schema: dict[str, Any], lo: float | None, hi: float | None) -> dict[str, Any]:
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    return schema


def _bounds(value: float, lo: float | None, hi: float | None, path: str) -> None:
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise Invalid(path, f"must be between {lo} and {hi}")
    if lo is not None and value < lo:
        raise Invalid(path, f"must be at least {lo}")
    if hi is not None and value > hi:
        raise Invalid(path, f"must be at most {hi}")


def boolean() -> Validator:
    """A JSON boolean."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, bool):
            raise Invalid(path, "must be a boolean")
        return value

    return Rule(check, {"type": "boolean"})


class Nullable(Rule):
    """``item``, or JSON ``null``, which the real service takes as "reset to the default".

    Validating ``null`` yields ``default`` itself, so the update that follows stores the
    service's default with no special case; ``default`` stays readable for descriptions of
    the API built from these structures (the schema says it too).
    """

    def __init__(self, item: Validator, default: Any) -> None:
        self.item = item
        self.default = default
        schema = {"anyOf": [item.schema, {"type": "null"}], "default": default}
        super().__init__(self._nullable, schema)

    def _nullable(self, value: Any, path: str) -> Any:
        """The default for ``null``, else what ``item`` makes of ``value``."""
        return self.default if value is None else self.item(value, path)


def one_of(*shapes: tuple[str, Validator]) -> Validator:
    """Exactly one of several named object shapes, told apart by their field names."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        failures: list[tuple[int, Invalid]] = []
        for _, shape in shapes:
            try:
                return shape(value, path)
            except Invalid as exc:
                failures.append((sum(1 for key in value if key in exc.fields), exc))
        # Name the problem of the shape the body comes closest to, when it is recognisable.
        overlap, closest = max(failures, key=lambda f: f[0])
        if overlap:
            raise closest
        names = "; ".join(name for name, _ in shapes)
        raise Invalid(path, f"must be one of: {names}")

    # The first shape that fits wins, as ``anyOf`` says (the shapes' fields tell them apart).
    return Rule(check, {"anyOf": [shape.schema for _, shape in shapes]})


def array(item: Validator) -> Validator:
    """A JSON array whose every element passes ``item``."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise Invalid(path, "must be an array")
        return [item(element, _join(path, i)) for i, element in enumerate(value)]

    return Rule(check, {"type": "array", "items": item.schema})


def obj(fields: dict[str, Validator], required: Iterable[str] = ()) -> Validator:
    """A JSON object with only the listed fields, the ``required`` ones present."""
    needed = tuple(required)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        known = frozenset(fields)
        for key in value:
            if key not in fields:
                raise Invalid(_join(path, key), "is not an allowed field", known)
        for key in needed:
            if key not in value:
                raise Invalid(_join(path, key), "is required", known)
        return {key: fields[key](element, _join(path, key)) for key, element in value.items()}

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: rule.schema for key, rule in fields.items()},
        "additionalProperties": False,
    }
    if needed:
        schema["required"] = list(needed)
    return Rule(check, schema)


_CREDENTIALS = obj({"username": string(), "password": string()}, required=("username", "password"))
_ACCESS_KEY = obj(
    {"accessKeyId": string(), "secretKey": string()}, required=("accessKeyId", "secretKey")
)
_CONNECTION_STRING = obj({"connectionString": string(1)}, required=("connectionString",))
_MUTUAL_TLS = obj(
    {"certificate": string(1), "privateKey": string(1)}, required=("certificate", "privateKey")
)
# The four credential shapes of a Kafka source, and the authentication methods taking each
# (IAM_ROLE takes none: the pipe's iamRole is used).
KAFKA_CREDENTIALS = one_of(
    ("{username, password}", _CREDENTIALS),
    ("{accessKeyId, secretKey}", _ACCESS_KEY),
    ("{connectionString}", _CONNECTION_STRING),
    ("{certificate, privateKey}", _MUTUAL_TLS),
)
KAFKA_AUTHENTICATION = (
    "PLAIN",
    "SCRAM-SHA-256",
    "SCRAM-SHA-512",
    "IAM_ROLE",
    "IAM_USER",
    "MUTUAL_TLS",
)
CREDENTIAL_SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    "PLAIN": (frozenset({"username", "password"}), frozenset({"connectionString"})),
    "SCRAM-SHA-256": (frozenset({"username", "password"}),),
    "SCRAM-SHA-512": (frozenset({"username", "password"}),),
    "IAM_USER": (frozenset({"accessKeyId", "secretKey"}),),
    "MUTUAL_TLS": (frozenset({"certificate", "privateKey"}),),
    "IAM_ROLE": (),
}
OBJECT_STORAGE_AUTHENTICATION = (
    "IAM_ROLE",
    "IAM_USER",
    "CONNECTION_STRING",
    "SERVICE_ACCOUNT",
    "PUBLIC",
)
_MAPPING_KEY = {
    "sourceSchemaName": string(1),
    "sourceTable": string(1),
    "targetTable": string(1),
}
_MAPPING_KEY_NAMES = tuple(_MAPPING_KEY)
TABLE_ENGINES = ("MergeTree", "ReplacingMergeTree", "Null")

# Every pipe setting accepts null: the service then applies its default.
PIPE_SETTINGS = obj(
    {
        "streaming_max_insert_wait_ms": Nullable(integer(500, 60000), 5000),
        "object_storage_concurrency": Nullable(integer(1, 35), 25),
        "object_storage_polling_interval_ms": Nullable(integer(100, 3600000), 30000),
        "object_storage_max_insert_bytes": Nullable(integer(10485760, 53687091200), 10737418240),
        "object_storage_max_file_count": Nullable(integer(1, 10000), 100),
        "engine_max_threads": Nullable(integer(0, 64), 0),
        "engine_max_insert_threads": Nullable(integer(0, 16), 1),
        "engine_min_insert_block_size_bytes": Nullable(integer(0, 10737418240), 1073741824),
        "engine_max_download_threads": Nullable(integer(0, 32), 4),
        "engine_parallel_distributed_insert_select": Nullable(integer(0, 2), 2),
        "object_storage_use_cluster_function": Nullable(boolean(), True),
        "engine_parallel_view_processing": Nullable(boolean(), False),
    }
)

_SOURCE = obj(
    {
        "kafka": obj(
            {
                "authentication": Nullable(string(enum=KAFKA_AUTHENTICATION), "PLAIN"),
                "iamRole": Nullable(string(), None),
                "caCertificate": Nullable(string(), None),
                "reversePrivateEndpointIds": array(uuid_string()),
                "credentials": KAFKA_CREDENTIALS,
            }
        ),
        "objectStorage": obj(
            {
                "authentication": string(enum=OBJECT_STORAGE_AUTHENTICATION),
                "skipInitialLoad": Nullable(boolean(), False),
                "startAfter": Nullable(string(1), None),
                "iamRole": Nullable(string(), None),
                "connectionString": Nullable(string(), None),
                "path": Nullable(string(), None),
                "azureContainerName": Nullable(string(), None),
                "accessKey": Nullable(_ACCESS_KEY, None),
                "serviceAccountKey": Nullable(string(1), None),
            }
        ),
        "kinesis": obj({"iamRole": string(), "accessKey": _ACCESS_KEY}),
        "postgres": obj(
            {
                "host": string(1),
                "port": integer(1, 65535),
                "database": string(1),
                "credentials": _CREDENTIALS,
                "tlsHost": Nullable(string(1), None),
                "caCertificate": Nullable(string(1), None),
                "disableTls": Nullable(boolean(), False),
                "skipCertVerification": Nullable(boolean(), False),
                "settings": obj({"syncIntervalSeconds": integer(1), "pullBatchSize": integer(1)}),
                "tableMappingsToAdd": array(
                    obj(
                        {
                            **_MAPPING_KEY,
                            "excludedColumns": array(string()),
                            "useCustomSortingKey": boolean(),
                            "sortingKeys": array(string()),
                            "tableEngine": string(enum=TABLE_ENGINES),
                        },
                        required=_MAPPING_KEY_NAMES,
                    )
                ),
                "tableMappingsToRemove": array(obj(_MAPPING_KEY, required=_MAPPING_KEY_NAMES)),
            }
        ),
        "validateSamples": boolean(),
    }
)

PIPE_UPDATE = obj(
    {
        "name": string(1, 255),
        "source": _SOURCE,
        "destination": obj(
            {
                "columns": array(
                    obj({"name": string(1), "type": string(1)}, required=("name", "type"))
                )
            }
        ),
        "fieldMappings": array(
            obj(
                {"sourceField": string(1), "destinationField": string(1)},
                required=("sourceField", "destinationField"),
            )
        ),
        "settings": PIPE_SETTINGS,
    }
)

# The real service's cloud provider enum (regions are left open: each cloud has its own list).
CLOUD_PROVIDERS = ("aws", "gcp", "azure")
_ENDPOINT = obj(
    {
        "id": string(1),
        "description": string(),
        "cloudProvider": string(enum=CLOUD_PROVIDERS),
        "region": string(1),
    },
    required=("id",),
)
ORGANIZATION_UPDATE = obj(
    {
        "name": string(1, 255),
        "privateEndpoints": obj({"add": array(_ENDPOINT), "remove": array(_ENDPOINT)}),
    }
)

_SERIES = obj(
    {
        "type": string(enum=("time", "table", "number", "search", "markdown")),
        "dataSource": string(enum=("events", "metrics")),
        "aggFn": string(),
        "where": string(),
        "groupBy": array(string()),
    },
    required=("type",),
)
_TILE = obj(
    {
        "id": string(),
        "name": string(),
        "x": integer(0, 23),
        "y": integer(0),
        "w": integer(1, 24),
        "h": integer(1),
        "asRatio": boolean(),
        "series": array(_SERIES),
    },
    required=("name", "x", "y", "w", "h", "series"),
)
DASHBOARD = obj(
    {"id": string(), "name": string(1), "tiles": array(_TILE), "tags": array(string())},
    required=("name",),
)


def check_field_mappings(pipe: dict[str, Any]) -> None:
    """The real service's rule: every destination column mapped once, to existing columns only.

    Checked on the pipe as it would be after an update that touches ``fieldMappings`` or
    ``destination.columns``; a violation is the 400 the service answers.
    """
    columns = [c["name"] for c in pipe.get("destination", {}).get("columns", [])]
    known = set(columns)
    seen: set[str] = set()
    for i, mapping in enumerate(pipe.get("fieldMappings", [])):
        target = mapping["destinationField"]
        where = f"fieldMappings.{i}.destinationField"
        if target not in known:
            listed = ", ".join(columns) or "none"
            raise ApiError(
                400, f"{where} {target} is not a column of the destination table ({listed})"
            )
        if target in seen:
            raise ApiError(400, f"{where} {target} is mapped more than once")
        seen.add(target)
    missing = [c for c in columns if c not in seen]
    if missing:
        raise ApiError(
            400,
            f"fieldMappings leave destination columns {', '.join(missing)} not mapped: "
            "every destination column must be mapped",
        )


def check_kafka_credentials(
    kafka: dict[str, Any], changes: dict[str, Any], *, switched: bool
) -> None:
    """The credentials must be a shape the authentication method takes; a method that needs
    credentials of another shape than those stored needs them in the same request."""
    method = kafka.get("authentication") or "PLAIN"
    shapes = CREDENTIAL_SHAPES.get(method, ())
    credentials = kafka.get("credentials")
    if "credentials" in changes and frozenset(changes["credentials"]) not in shapes:
        accepted = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in shapes) or "none"
        raise ApiError(
            400,
            f"source.kafka.credentials do not fit authentication {method} (it takes {accepted})",
        )
    fitting = isinstance(credentials, dict) and frozenset(credentials) in shapes
    if switched and shapes and not fitting:
        raise ApiError(
            400, f"source.kafka.credentials are required to switch authentication to {method}"
        )


def check_object_storage(source: dict[str, Any]) -> None:
    """``startAfter`` cannot be given when the initial load is skipped."""
    if source.get("skipInitialLoad") and source.get("startAfter") is not None:
        raise ApiError(
            400, "source.objectStorage.startAfter cannot be provided when skipInitialLoad is true"
        )


def validate_pipe_update(body: Any) -> dict[str, Any]:
    """The normalised pipe PATCH body, or a 400 naming the first bad field."""
    return _management(PIPE_UPDATE, body)


def validate_organization_update(body: Any) -> dict[str, Any]:
    """The normalised organization PATCH body, or a 400 naming the first bad field."""
    return _management(ORGANIZATION_UPDATE, body)


def validate_dashboard(body: Any) -> dict[str, Any]:
    """The dashboard body, or a 400 in the dashboards interface's message shape."""
    if not isinstance(body, dict):
        raise ApiError(400, "Body validation failed: body must be a JSON object")
    try:
        result: dict[str, Any] = DASHBOARD(body, "")
    except Invalid as exc:
        raise ApiError(400, f"Body validation failed: {exc.path}: {exc.why}") from None
    return result


def _management(schema: Validator, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    try:
        result: dict[str, Any] = schema(body, "")
    except Invalid as exc:
        raise ApiError(400, f"{exc.path} {exc.why}") from None
    return result
