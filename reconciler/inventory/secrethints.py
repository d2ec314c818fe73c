"""The comments ``export`` writes where a pipe's write-only secrets were left out.

Nothing here lists secret fields: which subtrees of a source are secret is the one secret-field
list (``model.fields.SECRET_FIELDS``), the Kafka credential shape each authentication method
takes is ``KAFKA_CREDENTIAL_SHAPES``, and the members of a secret object (``{username,
password}``, ``{accessKeyId, secretKey}``) and their order come from the pipe schema. Each
member becomes a reference named after the pipe — ``{fromEnv: ORDERS_PASSWORD}``, and the
key material of mutual TLS as files, ``{fromFile: orders.key}`` — so a field added to the list
or the schema is hinted without a change here. A secret inside a create-time object (the
schema registry's ``credentials``) is hinted when the manifest carries that object
(``export --by-name``) and the object says how it authenticates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

from reconciler.load.schema import COMMON_FILE, KIND_FILES
from reconciler.model.fields import (
    KAFKA_CREDENTIAL_SHAPES,
    KAFKA_DEFAULT_AUTHENTICATION,
    SECRET_FIELDS,
)
from reconciler.model.json import JsonMapping
from reconciler.model.schematree import alternatives, child, members, node_at

__all__: list[str] = []


# Members that are PEM files rather than short values: referenced as files, with this suffix.
_FILE_SUFFIX = {"certificate": "crt", "privateKey": "key"}


def secret_hints(
    kind: str, source: JsonMapping, prefix: str, stem: str, *, create_time: bool = False
) -> list[str]:
    """Return one YAML line per way to state the secrets of a ``kind`` source (first: usual).

    With ``create_time`` (the manifest carries the create-time fields, as ``export --by-name``
    writes it), a create-time object that authenticates (a schema registry with
    ``authentication``) also gets a line for the secret a create sends inside it.
    """
    nested = _nested_hints(kind, source, prefix, stem) if create_time else []
    if kind == "kafka":
        method = str(source.get("authentication") or KAFKA_DEFAULT_AUTHENTICATION)
        shapes = KAFKA_CREDENTIAL_SHAPES.get(method, KAFKA_CREDENTIAL_SHAPES["PLAIN"][:1])
        ordered = _kafka_shapes()
        return [
            _line("credentials", ordered[shape], prefix, stem) + ("   # or this shape" if i else "")
            for i, shape in enumerate(shapes)
        ] + nested
    pipe = KIND_FILES["Pipe"]
    lines = []
    for i, name in enumerate(_writable_secrets(kind)):
        declared = node_at(pipe, f"/$defs/{kind}/properties/{name}")
        text = _line(name, _members(*declared), prefix, stem)
        lines.append(text + (f"   # instead: {_summary(declared[0])}" if i else ""))
    return lines + nested


def _nested_hints(kind: str, source: JsonMapping, prefix: str, stem: str) -> list[str]:
    """Lines for the secret fields inside an object of the source (``schemaRegistry``), for
    each such object the live source has and that says how it authenticates."""
    pipe = KIND_FILES["Pipe"]
    lines = []
    for sub in SECRET_FIELDS.get(kind, ()):
        if len(sub) != 2:
            continue
        parent, name = str(sub[0]), str(sub[1])
        found = source.get(parent)
        if not isinstance(found, Mapping) or not found.get("authentication"):
            continue
        declared = child(*node_at(pipe, f"/$defs/{kind}/properties/{parent}"), name)
        if declared is None:
            continue
        scoped = f"{prefix}_{_words(parent)}"
        text = _line(name, _members(*declared), scoped, f"{stem}-{parent}")
        lines.append(f"{text}   # inside {parent} (needed to create the pipe)")
    return lines


def _words(name: str) -> str:
    """``schemaRegistry`` → ``SCHEMA_REGISTRY`` (how a reference's variable is named)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def has_secrets(kind: str) -> bool:
    """Tell whether a source kind has write-only secrets to hint at."""
    return bool(_writable_secrets(kind))


def _writable_secrets(kind: str) -> list[str]:
    """The secret fields directly under ``source.<kind>`` (those inside a create-time object,
    such as the schema registry's credentials, are hinted by ``_nested_hints``)."""
    return [str(sub[0]) for sub in SECRET_FIELDS.get(kind, ()) if len(sub) == 1]


def _line(name: str, members: tuple[str, ...], prefix: str, stem: str) -> str:
    if not members:
        return f"{name}: {_reference(name, prefix, stem)}"
    inner = ", ".join(f"{m}: {_reference(m, prefix, stem)}" for m in members)
    return f"{name}: {{{inner}}}"


def _reference(member: str, prefix: str, stem: str) -> str:
    if member in _FILE_SUFFIX:
        return f"{{fromFile: {stem}.{_FILE_SUFFIX[member]}}}"
    return f"{{fromEnv: {prefix}_{_words(member)}}}"


def _members(node: JsonMapping, doc: str) -> tuple[str, ...]:
    """Return the members of a secret object in schema order; () for a single reference."""
    names = tuple(members(node, doc))
    return () if "fromEnv" in names else names


def _summary(node: JsonMapping) -> str:
    """Return the first clause of a field's description (what the alternative is for)."""
    text = str(node.get("description") or node.get("title") or "")
    return re.split(r": |\. ", text, maxsplit=1)[0].rstrip(".")


@cache
def _kafka_shapes() -> dict[frozenset[str], tuple[str, ...]]:
    """Return every Kafka credential shape of the schema, its members in schema order."""
    node, doc = node_at(COMMON_FILE, "/$defs/kafkaCredentials")
    out: dict[frozenset[str], tuple[str, ...]] = {}
    for shape, shape_doc in alternatives(node, doc):
        names = _members(shape, shape_doc)
        out[frozenset(names)] = names
    return out
