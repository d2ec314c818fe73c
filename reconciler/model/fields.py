"""What the API lets us change: the field catalogue of each resource kind, as the plan reads it.

A manifest may state any field of the update body (writable) and some read-only fields as
*expectations*. The plan needs to know which is which, which lists are replaced whole and
which are set-like, and which subtrees are write-only secrets. Every such fact of a pipe field
is an ``x-reconcile`` annotation in the pipe schema (``model.catalogue`` reads them); this
module derives the tables and tests the rest of the tool uses from it, and keeps what is not a
fact of one field (credential shapes, table-mapping keys, the field-mapping rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.model.catalogue import facts, field_paths
from reconciler.model.resources import JsonPath

__all__ = [
    "DATABASE_KINDS",
    "DESTINATION_REQUIRED",
    "EDITABLE_MAPPINGS",
    "KAFKA_CREDENTIAL_SHAPES",
    "KAFKA_DEFAULT_AUTHENTICATION",
    "PATCH_REQUIRES",
    "PIPE_IDENTITY",
    "REDACTED_KEYS",
    "REQUIRED_TO_CREATE",
    "RESET_SENDS_DEFAULT",
    "SECRET_FIELDS",
    "SECRET_FIELD_NAMES",
    "SOURCE_KINDS",
    "create_omits_null",
    "database_kind",
    "field_mapping_problems",
    "is_create_time_path",
    "is_create_time_secret",
    "is_secret_path",
    "is_table_mappings_path",
    "is_validate_only",
    "is_writable_pipe_path",
    "table_mapping_fields",
]


_PATHS = field_paths()
# Keys of a Pipe spec that identify the pipe rather than describe it.
PIPE_IDENTITY: frozenset[str] = frozenset(
    str(p[0]) for p in _PATHS if len(p) == 1 and facts(p).identity
)
# The source kinds (the objects under ``source``), in schema order.
SOURCE_KINDS: tuple[str, ...] = tuple(
    str(p[1])
    for p in _PATHS
    if len(p) == 2 and p[0] == "source" and any(q[:2] == p and len(q) > 2 for q in _PATHS)
)
# The source kinds that copy database tables: they carry ``settings`` and ``tableMappings``
# instead of a destination table, and a stopped one reports ``Paused``.
DATABASE_KINDS: tuple[str, ...] = tuple(
    k for k in SOURCE_KINDS if ("source", k, "tableMappings") in _PATHS
)


def _under(kind: str) -> list[tuple[JsonPath, JsonPath]]:
    """Each listed field under ``source.<kind>``: (its full path, its path inside the kind)."""
    return [(p, p[2:]) for p in _PATHS if len(p) > 2 and p[:2] == ("source", kind)]


# Fields the service requires in every update of a source of that kind (its patch shape marks
# them required): an update of the source sends them even when unchanged.
PATCH_REQUIRES: dict[str, tuple[str, ...]] = {
    kind: names
    for kind in SOURCE_KINDS
    for names in [tuple(str(sub[0]) for p, sub in _under(kind) if facts(p).sent_with_every_update)]
    if names
}
# The one list of write-only secret subtrees of a pipe's source, per source kind, as paths
# under ``source.<kind>``: the fields the schema marks ``sensitive`` (the API accepts them and
# never returns them; ``connectionString`` is returned masked, so it is treated alike). Every
# other view of "what is secret" is derived from this table. Kafka ``credentials`` come in four
# shapes ({username, password}, {accessKeyId, secretKey}, {connectionString}, {certificate,
# privateKey}): the whole subtree is the secret, whatever its shape, so switching shapes is one
# fingerprinted change. The schema registry's ``credentials`` sit inside a create-time field: a
# create-time secret (see ``is_create_time_secret``).
SECRET_FIELDS: dict[str, tuple[JsonPath, ...]] = {
    kind: subs
    for kind in SOURCE_KINDS
    for subs in [tuple(sub for p, sub in _under(kind) if facts(p).sensitive)]
    if subs
}
# Every secret subtree's key, whatever the source kind (a value under one of these keys is
# never echoed in a message).
SECRET_FIELD_NAMES: frozenset[str] = frozenset(
    str(sub[-1]) for subs in SECRET_FIELDS.values() for sub in subs
)
# What a create must state, per source kind: paths under ``source.<kind>`` (dotted), then the
# destination fields, as the schema marks them ``requiredToCreate``. The service marks none
# required: these are inferred from what a pipe needs to run.
REQUIRED_TO_CREATE: dict[str, tuple[str, ...]] = {
    kind: tuple(".".join(map(str, sub)) for p, sub in _under(kind) if facts(p).required_for(kind))
    for kind in SOURCE_KINDS
}
DESTINATION_REQUIRED: dict[str, tuple[str, ...]] = {
    kind: tuple(
        str(p[1])
        for p in _PATHS
        if len(p) == 2 and p[0] == "destination" and facts(p).required_for(kind)
    )
    for kind in SOURCE_KINDS
}
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
# which gives the same default. The schema marks such fields ``resetSendsDefault`` and
# ``createOmitsNull``; both lists are checked against the service's contract.
RESET_SENDS_DEFAULT: frozenset[JsonPath] = frozenset(
    p for p in _PATHS if facts(p).reset_sends_default
)
CREATE_OMITS_NULL: frozenset[JsonPath] = frozenset(p for p in _PATHS if facts(p).create_omits_null)


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
# The database kinds whose table mappings an update edits (the others' are create-time).
EDITABLE_MAPPINGS: frozenset[str] = frozenset(
    k for k in DATABASE_KINDS if facts(("source", k, "tableMappings")).writable
)


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
    return facts(path).writable


def is_create_time_path(path: JsonPath) -> bool:
    """Tell whether a spec path is a create-time field: sent on create, never changed by update.

    Every field of ``source.<kind>`` and ``destination`` that the update body lacks (kafka
    brokers/topics/type/format/…, object storage url/format/…, kinesis stream/region/…,
    postgres type and replication settings, destination database/table/tableDefinition/…).
    ``state`` and ``scaling`` are not: they have endpoints of their own.
    """
    found = facts(path)
    return found.create_time and not found.writable


def is_secret_path(path: JsonPath) -> bool:
    """Tell whether a spec path is (inside) a write-only secret subtree."""
    return facts(path).sensitive


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
    return bool(path) and not facts(path[:2]).read_back
