"""The comments ``export`` writes where a pipe's write-only secrets were left out.

Nothing here lists secret fields: which subtrees of a source are secret is the one secret-field
list (``model.fields.SECRET_FIELDS``), the Kafka credential shape each authentication method
takes is ``KAFKA_CREDENTIAL_SHAPES``, and the members of a secret object (``{username,
password}``, ``{accessKeyId, secretKey}``) and their order come from the pipe schema. Each
member becomes a reference named after the pipe — ``{fromEnv: ORDERS_PASSWORD}``, and the
key material of mutual TLS as files, ``{fromFile: orders.key}`` — so a field added to the list
or the schema is hinted without a change here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from reconciler.load.schema import COMMON_FILE, KIND_FILES, load_schemas
from reconciler.model.fields import (
    KAFKA_CREDENTIAL_SHAPES,
    KAFKA_DEFAULT_AUTHENTICATION,
    SECRET_FIELDS,
)
from reconciler.model.json import JsonMapping

# Members that are PEM files rather than short values: referenced as files, with this suffix.
_FILE_SUFFIX = {"certificate": "crt", "privateKey": "key"}


def secret_hints(kind: str, source: JsonMapping, prefix: str, stem: str) -> list[str]:
    """Return one YAML line per way to state the secrets of a ``kind`` source (first: usual)."""
    if kind == "kafka":
        method = str(source.get("authentication") or KAFKA_DEFAULT_AUTHENTICATION)
        shapes = KAFKA_CREDENTIAL_SHAPES.get(method, KAFKA_CREDENTIAL_SHAPES["PLAIN"][:1])
        ordered = _kafka_shapes()
        return [
            _line("credentials", ordered[shape], prefix, stem) + ("   # or this shape" if i else "")
            for i, shape in enumerate(shapes)
        ]
    pipe = KIND_FILES["Pipe"]
    properties = load_schemas()[pipe]["$defs"][kind]["properties"]
    lines = []
    for i, name in enumerate(SECRET_FIELDS.get(kind, ())):
        declared = properties[name]
        text = _line(name, _members(_resolve(declared, pipe)[0]), prefix, stem)
        lines.append(text + (f"   # instead: {_summary(declared)}" if i else ""))
    return lines


def has_secrets(kind: str) -> bool:
    """Tell whether a source kind has write-only secrets to hint at."""
    return bool(SECRET_FIELDS.get(kind))


def _line(name: str, members: tuple[str, ...], prefix: str, stem: str) -> str:
    if not members:
        return f"{name}: {_reference(name, prefix, stem)}"
    inner = ", ".join(f"{m}: {_reference(m, prefix, stem)}" for m in members)
    return f"{name}: {{{inner}}}"


def _reference(member: str, prefix: str, stem: str) -> str:
    if member in _FILE_SUFFIX:
        return f"{{fromFile: {stem}.{_FILE_SUFFIX[member]}}}"
    return f"{{fromEnv: {prefix}_{re.sub(r'(?<!^)(?=[A-Z])', '_', member).upper()}}}"


def _resolve(node: Mapping[str, Any], document: str) -> tuple[Mapping[str, Any], str]:
    """Follow ``$ref`` (and a nullable ``anyOf``) to the definition a field names."""
    schemas = load_schemas()
    while True:
        if "$ref" in node:
            target, _, pointer = str(node["$ref"]).partition("#")
            document = target or document
            found: Any = schemas[document]
            for part in pointer.strip("/").split("/"):
                found = found[part]
            node = found
        elif "anyOf" in node:
            node = next(n for n in node["anyOf"] if n.get("type") != "null")
        else:
            return node, document


def _members(node: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the members of a secret object in schema order; () for a single reference."""
    properties = node.get("properties") or {}
    return () if "fromEnv" in properties else tuple(properties)


def _summary(node: Mapping[str, Any]) -> str:
    """Return the first clause of a field's description (what the alternative is for)."""
    text = str(node.get("description") or node.get("title") or "")
    return re.split(r": |\. ", text, maxsplit=1)[0].rstrip(".")


@cache
def _kafka_shapes() -> dict[frozenset[str], tuple[str, ...]]:
    """Return every Kafka credential shape of the schema, its members in schema order."""
    node, document = _resolve({"$ref": f"{COMMON_FILE}#/$defs/kafkaCredentials"}, COMMON_FILE)
    out: dict[frozenset[str], tuple[str, ...]] = {}
    for alternative in node.get("oneOf", ()):
        shape, _ = _resolve(alternative, document)
        members = _members(shape)
        out[frozenset(members)] = members
    return out
