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

    def __init__(self, path: str, why: str):
        super().__init__(f"{path} {why}")
        self.path = path or "body"
        self.why = why


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
        for key in value:
            if key not in fields:
                raise Invalid(_join(path, key), "is not an allowed field")
        for key in needed:
            if key not in value:
                raise Invalid(_join(path, key), "is required")
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
_MAPPING_KEY = {
    "sourceSchemaName": string(1),
    "sourceTable": string(1),
    "targetTable": string(1),
}
_MAPPING_KEY_NAMES = tuple(_MAPPING_KEY)
TABLE_ENGINES = ("MergeTree", "ReplacingMergeTree", "Null")

PIPE_SETTINGS = obj(
    {
        "streaming_max_insert_wait_ms": integer(500, 60000),
        "object_storage_concurrency": integer(1, 35),
        "object_storage_polling_interval_ms": integer(100, 3600000),
        "object_storage_max_insert_bytes": integer(10485760, 53687091200),
        "object_storage_max_file_count": integer(1, 10000),
        "engine_max_threads": integer(0, 64),
        "engine_max_insert_threads": integer(0, 16),
        "engine_min_insert_block_size_bytes": integer(0, 10737418240),
        "engine_max_download_threads": integer(0, 32),
        "engine_parallel_distributed_insert_select": integer(0, 2),
        "object_storage_use_cluster_function": boolean(),
        "engine_parallel_view_processing": boolean(),
    }
)

_SOURCE = obj(
    {
        "kafka": obj(
            {
                "iamRole": string(),
                "caCertificate": string(),
                "reversePrivateEndpointIds": array(uuid_string()),
                "credentials": _CREDENTIALS,
            }
        ),
        "objectStorage": obj(
            {
                "iamRole": string(),
                "connectionString": string(),
                "path": string(),
                "azureContainerName": string(),
                "accessKey": _ACCESS_KEY,
            }
        ),
        "kinesis": obj({"iamRole": string(), "accessKey": _ACCESS_KEY}),
        "postgres": obj(
            {
                "host": string(1),
                "port": integer(1, 65535),
                "database": string(1),
                "credentials": _CREDENTIALS,
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

_ENDPOINT = obj({"id": string(1), "description": string()}, required=("id",))
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
