"""The pipe rules shared by the create and PATCH bodies, and the checks across their fields.

The credential shapes of a Kafka source and the authentication methods taking each, the
object storage authentication methods, the table engines of a database pipe's mappings and
the pipe settings with their bounds and defaults are written here once, for ``pipe_bodies``,
``create``, ``patch_bodies`` and ``databases`` to build their bodies from. The ``check_*``
functions are the rules no single field can state (every destination column mapped once,
credentials that fit the authentication method, ``startAfter`` with ``skipInitialLoad``):
they look at the pipe as it would be after the request and answer the service's 400. The
bounds are the real service's (DESIGN.md, "API facts"), so what it would reject is rejected
here too.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.protocol import ApiError
from reconciler.emulator.validation import (
    Invalid,
    Nullable,
    Rule,
    Validator,
    boolean,
    integer,
    obj,
    one_of,
    string,
)

__all__: list[str] = []


USER_CREDENTIALS = obj(
    {"username": string(), "password": string()}, required=("username", "password")
)
ACCESS_KEY = obj(
    {"accessKeyId": string(), "secretKey": string()}, required=("accessKeyId", "secretKey")
)
_CONNECTION_STRING = obj({"connectionString": string(1)}, required=("connectionString",))
_MUTUAL_TLS = obj(
    {"certificate": string(1), "privateKey": string(1)}, required=("certificate", "privateKey")
)
# The four credential shapes of a Kafka source, and the authentication methods taking each
# (IAM_ROLE takes none: the pipe's iamRole is used).
KAFKA_CREDENTIALS = one_of(
    ("{username, password}", USER_CREDENTIALS),
    ("{accessKeyId, secretKey}", ACCESS_KEY),
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
