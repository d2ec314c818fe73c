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

__all__: list[str] = []


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


def integer(lo: int | None = None, hi: int | None = None, multiple: int | None = None) -> Validator:
    """An integral JSON number (``5000.0`` is accepted as 5000; booleans are not numbers)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be an integer")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise Invalid(path, "must be an integer")
            value = int(value)
        _bounds(value, lo, hi, path)
        _multiple(value, multiple, path)
        return value

    return Rule(check, _bounded({"type": "integer"}, lo, hi, multiple))


def number(
    lo: float | None = None, hi: float | None = None, multiple: int | None = None
) -> Validator:
    """Any finite JSON number (not a boolean)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise Invalid(path, "must be a finite number")
        _bounds(value, lo, hi, path)
        _multiple(value, multiple, path)
        return value

    return Rule(check, _bounded({"type": "number"}, lo, hi, multiple))


def _bounded(
    schema: dict[str, Any], lo: float | None, hi: float | None, multiple: int | None = None
) -> dict[str, Any]:
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    if multiple is not None:
        schema["multipleOf"] = multiple
    return schema


def _multiple(value: float, multiple: int | None, path: str) -> None:
    if multiple is not None and value % multiple != 0:
        raise Invalid(path, f"must be a multiple of {multiple}")


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


class _Marker:
    """A value a validated body may carry that is not JSON: what ``null`` asks of the update."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# ``null`` for a field with no default of its own: KEEP leaves the stored value as it is (the
# service cannot be without it: a host, a port), ABSENT removes the field (a TLS host: the field
# no longer applies, and a field that does not apply is absent from answers, never null).
KEEP = _Marker("KEEP")
ABSENT = _Marker("ABSENT")


def merge(stored: dict[str, Any], changes: dict[str, Any]) -> None:
    """Apply validated ``changes`` to ``stored``: KEEP skips a field, ABSENT removes it."""
    for key, value in changes.items():
        if value is KEEP:
            continue
        if value is ABSENT:
            stored.pop(key, None)
        else:
            stored[key] = value


def given(changes: dict[str, Any]) -> dict[str, Any]:
    """The fields of validated ``changes`` that carry a value (not KEEP, ABSENT or None)."""
    return {k: v for k, v in changes.items() if v is not KEEP and v is not ABSENT and v is not None}


class Nullable(Rule):
    """``item``, or JSON ``null``, which the real service takes as "reset to the default".

    Validating ``null`` yields ``default`` itself, so the update that follows stores the
    service's default with no special case; ``default`` stays readable for descriptions of
    the API built from these structures (the schema says it too).
    """

    def __init__(self, item: Validator, default: Any) -> None:
        self.item = item
        self.default = default
        schema: dict[str, Any] = {"anyOf": [item.schema, {"type": "null"}]}
        if not isinstance(default, _Marker):
            schema["default"] = default
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


def array(item: Validator, unique: bool = False) -> Validator:
    """A JSON array whose every element passes ``item`` (all different when ``unique``)."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise Invalid(path, "must be an array")
        result = [item(element, _join(path, i)) for i, element in enumerate(value)]
        if unique:
            seen: list[Any] = []
            for i, element in enumerate(result):
                if element in seen:
                    raise Invalid(_join(path, i), "repeats an earlier item (items must be unique)")
                seen.append(element)
        return result

    schema: dict[str, Any] = {"type": "array", "items": item.schema}
    if unique:
        schema["uniqueItems"] = True
    return Rule(check, schema)


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
OBJECT_STORAGE_AUTHENTICATION = ("IAM_ROLE", "IAM_USER", "CONNECTION_STRING", "SERVICE_ACCOUNT")


def object_storage_authentication() -> Validator:
    """An object storage authentication method; ``PUBLIC`` is refused with the way to say it."""
    methods = string(enum=OBJECT_STORAGE_AUTHENTICATION)

    def check(value: Any, path: str) -> Any:
        if value == "PUBLIC":
            raise Invalid(
                path,
                "must be one of " + ", ".join(OBJECT_STORAGE_AUTHENTICATION) + " (PUBLIC is not "
                "a method: leave authentication and credentials out to read a public bucket)",
            )
        return methods(value, path)

    return Rule(check, methods.schema)


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

# The real service's cloud provider and region enums.
CLOUD_PROVIDERS = ("aws", "gcp", "azure")
REGIONS = (
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ca-central-1",
    "eu-central-1",
    "eu-west-1",
    "eu-west-2",
    "il-central-1",
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "us-east1",
    "us-central1",
    "europe-west2",
    "europe-west4",
    "asia-southeast1",
    "asia-northeast1",
    "eastus",
    "eastus2",
    "westus3",
    "germanywestcentral",
    "centralus",
)
_ENDPOINT = obj(
    {
        "id": string(1),
        "description": string(),
        "cloudProvider": string(enum=CLOUD_PROVIDERS),
        "region": string(enum=REGIONS),
    },
    required=("id",),
)
ORGANIZATION_UPDATE = obj(
    {
        "name": string(1, 255),
        "privateEndpoints": obj({"add": array(_ENDPOINT), "remove": array(_ENDPOINT)}),
        "enableCoreDumps": boolean(),
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
    """The real service's rule for given mappings: every destination column mapped once.

    Checked on the pipe as it would be after an update that touches ``fieldMappings`` or
    ``destination.columns``; a violation is the 400 the service answers.
    """
    if not pipe.get("fieldMappings"):
        return  # no mappings: every source field goes to the column of the same name
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


def check_kinesis(kinesis: dict[str, Any], changes: dict[str, Any]) -> None:
    """The credential field of the (maybe new) authentication must be there: ``iamRole`` for
    IAM_ROLE, ``accessKey`` for IAM_USER (in this request when the method changes to it)."""
    method = kinesis.get("authentication")
    where = "source.kinesis"
    if method == "IAM_ROLE" and not kinesis.get("iamRole"):
        raise ApiError(400, f"{where}.iamRole is required for authentication IAM_ROLE")
    if method == "IAM_USER" and kinesis.get("accessKey") is None:
        raise ApiError(400, f"{where}.accessKey is required for authentication IAM_USER")
    if "authentication" in changes and method == "IAM_USER" and "accessKey" not in changes:
        raise ApiError(400, f"{where}.accessKey is required to switch authentication to IAM_USER")


def check_object_storage(source: dict[str, Any]) -> None:
    """``startAfter`` cannot be given when the initial load is skipped."""
    if source.get("skipInitialLoad") and source.get("startAfter") is not None:
        raise ApiError(
            400, "source.objectStorage.startAfter cannot be provided when skipInitialLoad is true"
        )


def validate_organization_update(body: Any) -> dict[str, Any]:
    """The normalised organization PATCH body, or a 400 naming the first bad field."""
    return management(ORGANIZATION_UPDATE, body)


def validate_dashboard(body: Any) -> dict[str, Any]:
    """The dashboard body, or a 400 in the dashboards interface's message shape."""
    if not isinstance(body, dict):
        raise ApiError(400, "Body validation failed: body must be a JSON object")
    try:
        result: dict[str, Any] = DASHBOARD(body, "")
    except Invalid as exc:
        raise ApiError(400, f"Body validation failed: {exc.path}: {exc.why}") from None
    return result


def management(schema: Validator, body: Any) -> dict[str, Any]:
    """The body validated by ``schema``, or the management 400 naming the first bad field."""
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    try:
        result: dict[str, Any] = schema(body, "")
    except Invalid as exc:
        raise ApiError(400, f"{exc.path} {exc.why}") from None
    return result
