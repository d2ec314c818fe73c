"""The schema files read as a tree: ``$ref``s followed, members found, types named.

The JSON Schemas in ``schemas/`` are read here as plain JSON documents (the validators in
``load.schema`` read them for validation) and walked the one way every reader of their
structure needs: ``reconcile explain``, the field catalogue's ``x-reconcile`` facts and the
documentation's reference pages. A node is always carried with the file its ``$ref``s are
relative to. A ``$ref`` is followed across files, the referring node's own keys winning over
the target's (a field's own title or description over its definition's). A node's members are
its own ``properties`` and those of its ``oneOf``/``anyOf``/``allOf`` parts (a pipe's source
kinds, a secret reference's two forms, a nullable object), the first listing of a name
winning; a list's members are its items'. A type is named as a reader says it: ``integer``,
``mapping``, ``list of string``, the titles of the alternatives (``User name and password or
Access key``); an enumeration or a constant as the caller shows its values (``Values``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import NamedTuple

from reconciler.model.json import JsonLike, JsonMapping, JsonObject, as_items, as_mapping

__all__ = [
    "COMMON_FILE",
    "Values",
    "alternatives",
    "child",
    "document",
    "members",
    "node_at",
    "parts",
    "resolve",
    "schema_dir",
    "through_items",
    "type_name",
]

COMMON_FILE = "common.schema.json"
# A chain of $refs longer than this is a cycle in the schemas: the walk stops following it.
_MAX_REFS = 20
_ALTERNATIVES = ("oneOf", "anyOf")
_PARTS = (*_ALTERNATIVES, "allOf")

# A schema node (read-only JSON) and the file its $refs are relative to.
Node = tuple[JsonMapping, str]


class Member(NamedTuple):
    """A member of an object node: its schema (``$ref`` followed), file, and whether every
    value of the node must state it (``_required``)."""

    node: JsonMapping
    doc: str
    required: bool


class Values(StrEnum):
    """How a type name shows an enumeration or a constant."""

    # "enum", "constant": the values are shown beside the type (the reference's bounds).
    BRIEF = "brief"
    # "one of a, b", "the constant 'x'": the type name is all the reader sees of the field.
    SPELLED = "spelled"
    # "one of the values below": a list of the values follows (explain's VALUES line).
    BELOW = "below"


def schema_dir() -> Path:
    """Return the directory holding the schema files (packaged copy first, then the repo)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_schemas"
    if (packaged / COMMON_FILE).is_file():
        return packaged
    return package.parent / "schemas"


@cache
def document(name: str) -> JsonObject:
    """Return the schema file ``name`` (also its ``$id``) as JSON, read once."""
    data: JsonObject = json.loads((schema_dir() / name).read_text(encoding="utf-8"))
    return data


def resolve(node: JsonMapping, doc: str) -> Node:
    """Follow ``$ref`` across schema files, the referring node's own keys winning."""
    merged = dict(node)
    for _ in range(_MAX_REFS):
        if "$ref" not in merged:
            break
        target, _, pointer = str(merged.pop("$ref")).partition("#")
        doc = target or doc
        found: JsonLike = document(doc)
        for part in [p for p in pointer.split("/") if p]:
            found = as_mapping(found)[part]
        merged = {**as_mapping(found), **merged}
    return merged, doc


def node_at(doc: str, pointer: str) -> Node:
    """The node at a JSON pointer of a schema file (``$ref`` followed): ``/properties/spec``."""
    return resolve({"$ref": f"{doc}#{pointer}"}, doc)


def parts(node: JsonMapping, doc: str) -> list[Node]:
    """The node, then its ``oneOf``, ``anyOf`` and ``allOf`` parts (``$ref`` followed)."""
    found = [resolve(as_mapping(part), doc) for key in _PARTS for part in as_items(node.get(key))]
    return [(node, doc), *found]


def alternatives(node: JsonMapping, doc: str) -> list[Node]:
    """The node's ``oneOf`` then ``anyOf`` alternatives (``$ref`` followed)."""
    return [
        resolve(as_mapping(alt), doc) for key in _ALTERNATIVES for alt in as_items(node.get(key))
    ]


def through_items(node: JsonMapping, doc: str) -> Node:
    """A list's items (``$ref`` followed); any other node itself."""
    if node.get("type") == "array" and "items" in node:
        return resolve(as_mapping(node["items"]), doc)
    return node, doc


def members(node: JsonMapping, doc: str) -> dict[str, Member]:
    """The properties of a node and of its parts, by name, in order, the first listing winning."""
    required = _required(node, doc)
    found: dict[str, Member] = {}
    for part, part_doc in parts(node, doc):
        for name, sub in as_mapping(part.get("properties")).items():
            if name not in found:
                found[name] = Member(*resolve(as_mapping(sub), part_doc), required=name in required)
    return found


def _names(listed: JsonLike) -> set[str]:
    """The names of a ``required`` list (none when absent)."""
    return {str(name) for name in as_items(listed)}


def _required(node: JsonMapping, doc: str) -> set[str]:
    """The members every value of a node must state: its own ``required`` and its ``allOf``
    parts', and those every alternative of a ``oneOf`` or ``anyOf`` requires (a ``null``
    alternative aside: a nullable object, given at all, needs its required members)."""
    names = _names(node.get("required"))
    for part in as_items(node.get("allOf")):
        names |= _names(resolve(as_mapping(part), doc)[0].get("required"))
    for key in _ALTERNATIVES:
        resolved = [resolve(as_mapping(alt), doc)[0] for alt in as_items(node.get(key))]
        listed = [_names(alt.get("required")) for alt in resolved if alt.get("type") != "null"]
        if listed:
            names |= set.intersection(*listed)
    return names


def child(node: JsonMapping, doc: str, name: str) -> Node | None:
    """The member ``name`` of a node (of its items for a list; a map's values); None if none."""
    node, doc = through_items(node, doc)
    found = members(node, doc).get(name)
    if found is not None:
        return found.node, found.doc
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        return resolve(extra, doc)
    return None


def type_name(node: JsonMapping, doc: str, values: Values = Values.BRIEF) -> str:
    """Name a node's type: ``integer``, ``mapping``, ``list of …``, its alternatives' titles."""
    kind = node.get("type")
    if kind == "array":
        items, items_doc = resolve(as_mapping(node.get("items")), doc)
        inner = Values.SPELLED if values is Values.BELOW else values
        return f"list of {type_name(items, items_doc, inner)}"
    if isinstance(kind, list):
        return " or ".join(str(one) for one in kind)
    if kind:
        return "mapping" if kind == "object" else str(kind)
    if "enum" in node:
        return _enumeration(as_items(node["enum"]), values)
    if "const" in node:
        return "constant" if values is Values.BRIEF else f"the constant {node['const']!r}"
    # An alternative is named by its title, else by its own type (a nullable object's null).
    titles = [
        str(alt["title"]) if "title" in alt else type_name(alt, alt_doc, values)
        for alt, alt_doc in alternatives(node, doc)
    ]
    return " or ".join(titles) or "any"


def _enumeration(listed: Sequence[JsonLike], values: Values) -> str:
    """Name an enumeration as ``values`` asks."""
    if values is Values.BRIEF:
        return "enum"
    if values is Values.BELOW:
        return "one of the values below"
    return "one of " + ", ".join("null" if v is None else str(v) for v in listed)
