"""What the API lets us change: the field catalogue of each resource kind.

A manifest may state any field of the update body (writable) and some read-only fields as
*expectations*. The plan needs to know which is which, which lists are replaced whole and
which are set-like, and which subtrees are write-only secrets. This catalogue is the one
place that knows; it mirrors the API's pipe update body and the service's list of
read-only fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.model.resources import JsonPath

# Keys of a Pipe spec that identify the pipe rather than describe it.
PIPE_IDENTITY: frozenset[str] = frozenset({"organizationId", "serviceId", "service", "pipeId"})

SOURCE_KINDS: tuple[str, ...] = (
    "kafka",
    "objectStorage",
    "kinesis",
    "pubsub",
    "postgres",
    "mysql",
    "mongodb",
    "bigquery",
)
# The source kinds that copy database tables: they carry ``settings`` and ``tableMappings``
# instead of a destination table, and a stopped one reports ``Paused``.
DATABASE_KINDS: tuple[str, ...] = ("postgres", "mysql", "mongodb", "bigquery")

# Writable fields under source.<kind> (from the update body).
_SOURCE_WRITABLE: dict[str, frozenset[str]] = {
    "kafka": frozenset(
        {"authentication", "iamRole", "caCertificate", "reversePrivateEndpointIds", "credentials"}
    ),
    "objectStorage": frozenset(
        {
            "authentication",
            "skipInitialLoad",
            "startAfter",
            "iamRole",
            "connectionString",
            "path",
            "azureContainerName",
            "accessKey",
            "serviceAccountKey",
        }
    ),
    "kinesis": frozenset({"authentication", "iamRole", "accessKey"}),
    "pubsub": frozenset({"authentication", "ackDeadline", "serviceAccountKey"}),
    "mysql": frozenset(
        {
            "host",
            "port",
            "credentials",
            "authentication",
            "iamRole",
            "tlsHost",
            "caCertificate",
            "disableTls",
            "skipCertVerification",
            "serverId",
            "settings",
            "tableMappings",
        }
    ),
    "mongodb": frozenset(
        {
            "uri",
            "readPreference",
            "credentials",
            "tlsHost",
            "caCertificate",
            "disableTls",
            "skipCertVerification",
            "settings",
            "tableMappings",
        }
    ),
    # The service offers no update of a bigquery source: all of it is create-time.
    "bigquery": frozenset(),
    "postgres": frozenset(
        {
            "host",
            "port",
            "database",
            "credentials",
            "tlsHost",
            "caCertificate",
            "disableTls",
            "skipCertVerification",
            "settings",
            "tableMappings",
        }
    ),
}
# Writable members of a database source's ``settings`` (the others are create-time).
_SETTINGS_WRITABLE: dict[str, frozenset[str]] = {
    "postgres": frozenset({"syncIntervalSeconds", "pullBatchSize"}),
    "mysql": frozenset({"syncIntervalSeconds", "pullBatchSize", "useCompression"}),
    "mongodb": frozenset({"syncIntervalSeconds", "pullBatchSize"}),
}
# Fields the service requires in every update of a source of that kind (its patch shape marks
# them required): an update of the source sends them even when unchanged.
PATCH_REQUIRES: dict[str, tuple[str, ...]] = {
    "mysql": ("host", "port"),
    "mongodb": ("uri", "readPreference"),
    "pubsub": ("authentication", "serviceAccountKey"),
}
_TOP_WRITABLE: frozenset[str] = frozenset(
    {"name", "fieldMappings", "settings", "source", "destination"}
)

# The one list of write-only secret subtrees of a pipe's source, per source kind, as paths
# under ``source.<kind>``: the API accepts them and never returns them. ``connectionString`` is
# returned masked by the service, so it is treated alike. Every other view of "what is secret"
# is derived from this table. Kafka ``credentials`` come in four shapes ({username, password},
# {accessKeyId, secretKey}, {connectionString}, {certificate, privateKey}): the whole subtree is
# the secret, whatever its shape, so switching shapes is one fingerprinted change. The schema
# registry's ``credentials`` sit inside a create-time field: a create-time secret (see
# ``is_create_time_secret``).
SECRET_FIELDS: dict[str, tuple[JsonPath, ...]] = {
    "kafka": (("credentials",), ("schemaRegistry", "credentials")),
    "objectStorage": (("accessKey",), ("connectionString",), ("serviceAccountKey",)),
    "kinesis": (("accessKey",),),
    "pubsub": (("serviceAccountKey",),),
    "postgres": (("credentials",),),
    "mysql": (("credentials",),),
    "mongodb": (("credentials",),),
    # Create-time: a bigquery source cannot be updated.
    "bigquery": (("credentials",),),
}
# Every secret subtree's key, whatever the source kind (a value under one of these keys is
# never echoed in a message).
SECRET_FIELD_NAMES: frozenset[str] = frozenset(
    str(sub[-1]) for subs in SECRET_FIELDS.values() for sub in subs
)
# The shapes a secret object takes (the members of ``credentials`` or ``accessKey``).
USER_PASSWORD = frozenset({"username", "password"})
ACCESS_KEY = frozenset({"accessKeyId", "secretKey"})
CONNECTION_STRING = frozenset({"connectionString"})
CERTIFICATE_AND_KEY = frozenset({"certificate", "privateKey"})
SERVICE_ACCOUNT = frozenset({"serviceAccountFile"})
# The credential shapes each Kafka authentication method takes (IAM_ROLE takes none: the
# pipe's ``iamRole`` is used). The service refuses credentials of another shape, and a switch
# of method without credentials that fit it.
KAFKA_CREDENTIAL_SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    "PLAIN": (USER_PASSWORD, CONNECTION_STRING),
    "SCRAM-SHA-256": (USER_PASSWORD,),
    "SCRAM-SHA-512": (USER_PASSWORD,),
    "IAM_USER": (ACCESS_KEY,),
    "MUTUAL_TLS": (CERTIFICATE_AND_KEY,),
    "IAM_ROLE": (),
}
# Members of a secret object that hold key material — every member of every shape but the user
# name: redacted wherever they appear in what a server sends.
SECRET_MEMBERS: frozenset[str] = (
    USER_PASSWORD | ACCESS_KEY | CONNECTION_STRING | CERTIFICATE_AND_KEY | SERVICE_ACCOUNT
) - {"username"}
# What read-only views (``get``, ``export``) replace by ``(sensitive)`` in live objects.
REDACTED_KEYS: frozenset[str] = SECRET_FIELD_NAMES | SECRET_MEMBERS

KAFKA_DEFAULT_AUTHENTICATION = "PLAIN"

# ``null`` in a manifest resets a field to the service's default. An update sends the null,
# except where the field is an enumeration that lists no null: there it sends the default
# itself. A create sends the null too, except where the create body takes no null for the
# field (scaling, kafka authentication, the postgres TLS fields): there the field is left out,
# which gives the same default. Both lists are checked against the service's contract.
RESET_SENDS_DEFAULT: frozenset[JsonPath] = frozenset({("source", "kafka", "authentication")})
CREATE_OMITS_NULL: frozenset[JsonPath] = frozenset(
    {
        ("scaling",),
        ("source", "kafka", "authentication"),
        ("source", "postgres", "tlsHost"),
        ("source", "postgres", "caCertificate"),
        ("source", "postgres", "disableTls"),
        ("source", "postgres", "skipCertVerification"),
    }
)


def create_omits_null(path: JsonPath) -> bool:
    """Tell whether a create body leaves out a ``null`` at ``path`` (it takes none there)."""
    return any(path[: len(prefix)] == prefix for prefix in CREATE_OMITS_NULL)


# Arrays replaced whole when they differ (every other array is also replaced whole, except
# the set-like table mappings, which become add/remove).
TABLE_MAPPINGS: JsonPath = ("source", "postgres", "tableMappings")
TABLE_MAPPING_KEY: tuple[str, str, str] = ("sourceSchemaName", "sourceTable", "targetTable")
# A table mapping's identity per database kind: (where the source table lives, the source
# table, the target table). A bigquery source's mappings are create-time (no update).
TABLE_MAPPING_KEYS: dict[str, tuple[str, str, str]] = {
    "postgres": TABLE_MAPPING_KEY,
    "mysql": TABLE_MAPPING_KEY,
    "mongodb": ("sourceDatabaseName", "sourceCollection", "targetTable"),
    "bigquery": ("sourceDatasetName", "sourceTable", "targetTable"),
}
EDITABLE_MAPPINGS: frozenset[str] = frozenset({"postgres", "mysql", "mongodb"})


def table_mapping_fields(item: Mapping[str, object]) -> tuple[str, str, str]:
    """Return the key fields of a table mapping, told by the fields it has (kinds differ)."""
    if "sourceCollection" in item or "sourceDatabaseName" in item:
        return TABLE_MAPPING_KEYS["mongodb"]
    if "sourceDatasetName" in item:
        return TABLE_MAPPING_KEYS["bigquery"]
    return TABLE_MAPPING_KEY


def is_table_mappings_path(path: JsonPath) -> bool:
    """Tell whether a spec path is a database source's set of table mappings."""
    return (
        len(path) == 3
        and path[0] == "source"
        and path[1] in TABLE_MAPPING_KEYS
        and path[2] == "tableMappings"
    )


def database_kind(source: object) -> str | None:
    """Return the database kind a source (or source patch) body holds, if any."""
    if isinstance(source, Mapping):
        for kind in DATABASE_KINDS:
            if isinstance(source.get(kind), Mapping):
                return kind
    return None


def is_writable_pipe_path(path: JsonPath) -> bool:
    """Tell whether a spec path of a Pipe (identity removed) is writable through PATCH."""
    if not path:
        return False
    head = path[0]
    if head not in _TOP_WRITABLE:
        return False
    if head == "source":
        if len(path) < 2:
            return True
        kind = path[1]
        if kind == "validateSamples":
            return True
        if not _SOURCE_WRITABLE.get(str(kind)):
            return False  # not a source kind, or one no update changes (bigquery)
        if len(path) < 3:
            return True
        field = path[2]
        if field not in _SOURCE_WRITABLE[str(kind)]:
            return False
        if field == "settings" and len(path) >= 4:
            return path[3] in _SETTINGS_WRITABLE.get(str(kind), frozenset())
        return True
    if head == "destination":
        return len(path) < 2 or path[1] == "columns"
    return True


def is_create_time_path(path: JsonPath) -> bool:
    """Tell whether a spec path is a create-time field: sent on create, never changed by update.

    Every field of ``source.<kind>`` and ``destination`` that the update body lacks (kafka
    brokers/topics/type/format/…, object storage url/format/…, kinesis stream/region/…,
    postgres type and replication settings, destination database/table/tableDefinition/…).
    ``state`` and ``scaling`` are not: they have endpoints of their own.
    """
    if len(path) < 2 or is_writable_pipe_path(path):
        return False
    if path[0] == "source":
        return path[1] in _SOURCE_WRITABLE
    return path[0] == "destination"


def is_secret_path(path: JsonPath) -> bool:
    """Tell whether a spec path is (inside) a write-only secret subtree."""
    if len(path) < 3 or path[0] != "source":
        return False
    return any(path[2 : 2 + len(sub)] == sub for sub in SECRET_FIELDS.get(str(path[1]), ()))


def is_create_time_secret(path: JsonPath) -> bool:
    """Tell whether a secret path lies in a create-time field (schema registry credentials).

    The service takes it in the create body only and never returns it: it is sent on create,
    fingerprinted then, and afterwards compared to that fingerprint alone (a new value needs
    ``--replace``; a pipe this tool did not create has none, so nothing is compared).
    """
    return is_secret_path(path) and is_create_time_path(path)


def field_mapping_problems(
    columns: Sequence[str], targets: Sequence[str]
) -> list[tuple[int | None, str]]:
    """The service's fieldMappings rule: every destination column mapped exactly once, to
    columns the table has. Returns (index of the offending mapping, or None, problem)."""
    listed = ", ".join(columns) or "none"
    problems: list[tuple[int | None, str]] = []
    seen: set[str] = set()
    for index, target in enumerate(targets):
        if target not in columns:
            problems.append(
                (index, f"maps to {target!r}, which is not a column of the destination ({listed})")
            )
        elif target in seen:
            problems.append((index, f"maps to {target!r} a second time"))
        seen.add(target)
    missing = [c for c in columns if c not in seen]
    if missing:
        problems.append(
            (
                None,
                f"leave destination column(s) {', '.join(missing)} not mapped: every "
                "destination column must be mapped",
            )
        )
    return problems


def is_validate_only(path: JsonPath) -> bool:
    """Tell whether a path is a request-only flag that is never read back (validateSamples)."""
    return path[:2] == ("source", "validateSamples")
