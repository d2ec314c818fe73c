"""The field catalogue: what each field of a manifest is, read from the JSON Schemas.

Every per-field fact reconcile acts on is an ``x-reconcile`` annotation beside the field in
the kind's schema (``schemas/pipe.schema.json``, ``organization.schema.json``) — the file that
also validates manifests, drives editors and writes the documentation — so adding a field is
one schema edit. The facts:

* ``writable``: the pipe update (PATCH) changes it; ``createTime``: sent when the pipe is
  created, and on an existing pipe a difference needs a replacement. Both hold for the whole
  subtree and are inherited by fields that say neither (every setting of a bigquery source is
  create-time because the source says so). An object that says neither is what its members
  make it: writable when one of them is, else create-time when one of them is.
* ``sensitive``: a write-only secret subtree (a manifest writes ``{fromEnv}``/``{fromFile}``
  references; plans, state and output never show it).
* ``requiredToCreate``: a create must state it — ``true``, or the source kinds whose pipes
  need it (a destination table only for the streaming kinds).
* ``sentWithEveryUpdate``: the service takes an update of its source only with this field in it.
* ``createOmitsNull``: the create body takes no ``null`` here (a stated null is left out);
  ``resetSendsDefault``: an update sends the default itself for a ``null`` (an enumeration
  that lists no null); ``readBack: false``: a request-only flag the service never returns;
  ``identity``: says which pipe, never sent as a change; ``sentAs``: a manifest-only field
  resolved into another before anything is sent (endpoint names into their ids).

Nothing here imports from a higher stage: the schema files are read as plain JSON and walked
by ``model.schematree``, the walk ``explain`` and the reference pages use too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache, lru_cache

from reconciler.model.json import JsonMapping, as_items, as_mapping
from reconciler.model.resources import JsonPath
from reconciler.model.schematree import COMMON_FILE, members, node_at

__all__ = ["ALL", "ORGANIZATION_FILE", "defined_pattern", "facts"]

PIPE_FILE = "pipe.schema.json"
ORGANIZATION_FILE = "organization.schema.json"
ANNOTATION = "x-reconcile"


@dataclass(frozen=True)
class Facts:
    """What the catalogue says about one field of a pipe's spec."""

    writable: bool = False
    create_time: bool = False
    sensitive: bool = False
    # The source kinds whose create needs the field; ``ALL`` for every kind.
    required_to_create: frozenset[str] = frozenset()
    sent_with_every_update: bool = False
    create_omits_null: bool = False
    reset_sends_default: bool = False
    read_back: bool = True
    identity: bool = False
    # The field a manifest-only field is sent as, once resolved (endpoint names → their ids).
    sent_as: str | None = None
    # Whether the schema lists the field (else its facts are inferred from its parent's).
    listed: bool = True

    def required_for(self, kind: str) -> bool:
        """Tell whether a create of a pipe with a ``kind`` source must state the field."""
        return ALL in self.required_to_create or kind in self.required_to_create


ALL = "*"


def defined_pattern(name: str) -> str | None:
    """Return the ``pattern`` of the common schema's definition ``name`` (None if it has none)."""
    pattern = node_at(COMMON_FILE, f"/$defs/{name}")[0].get("pattern")
    return pattern if isinstance(pattern, str) else None


def _own(node: JsonMapping) -> Facts:
    """The facts a schema node states itself (its ``x-reconcile``)."""
    note = as_mapping(node.get(ANNOTATION))
    required = note.get("requiredToCreate", False)
    kinds = frozenset({ALL}) if required is True else frozenset(map(str, as_items(required)))
    sent_as = note.get("sentAs")
    return Facts(
        writable=bool(note.get("writable")),
        create_time=bool(note.get("createTime")),
        sensitive=bool(note.get("sensitive")),
        required_to_create=kinds,
        sent_with_every_update=bool(note.get("sentWithEveryUpdate")),
        create_omits_null=bool(note.get("createOmitsNull")),
        reset_sends_default=bool(note.get("resetSendsDefault")),
        read_back=note.get("readBack", True) is not False,
        identity=bool(note.get("identity")),
        sent_as=sent_as if isinstance(sent_as, str) else None,
    )


def _walk(
    node: JsonMapping, doc: str, path: JsonPath, inherited: Facts
) -> Iterator[tuple[JsonPath, Facts]]:
    """Yield every listed field under ``node`` with its facts (not inside a secret or a list)."""
    for name, (sub, sub_doc, _required) in members(node, doc).items():
        here = (*path, name)
        own = _own(sub)
        stated = own.writable or own.create_time
        found = replace(
            own,
            writable=own.writable or (inherited.writable and not stated),
            create_time=own.create_time or (inherited.create_time and not stated),
            sensitive=own.sensitive or inherited.sensitive,
        )
        yield here, found
        if not found.sensitive and sub.get("type") != "array":
            yield from _walk(sub, sub_doc, here, found)


@cache
def _catalogue(schema: str) -> tuple[dict[JsonPath, Facts], frozenset[JsonPath]]:
    """Every listed field of a kind's spec with its facts, and the objects whose access their
    members make (they state neither ``writable`` nor ``createTime``)."""
    spec, doc = node_at(schema, "/properties/spec")
    table = dict(_walk(spec, doc, (), Facts()))
    derived: set[JsonPath] = set()
    for path, found in list(table.items()):
        below = [f for p, f in table.items() if p[: len(path)] == path and len(p) > len(path)]
        if found.writable or found.create_time or not below:
            continue
        derived.add(path)
        if any(f.writable for f in below):
            table[path] = replace(found, writable=True)
        elif any(f.create_time for f in below):
            table[path] = replace(found, create_time=True)
    return table, frozenset(derived)


def _table(schema: str) -> dict[JsonPath, Facts]:
    return _catalogue(schema)[0]


def field_paths(schema: str = PIPE_FILE) -> tuple[JsonPath, ...]:
    """Return the spec path of every field a kind's schema lists, in schema order."""
    return tuple(_table(schema))


# Cached: the planner asks about the same few hundred paths for every pipe it plans.
@lru_cache(maxsize=8192)
def facts(path: JsonPath, schema: str = PIPE_FILE) -> Facts:
    """Return what the catalogue says of a spec path of a kind (a pipe unless ``schema`` says).

    A path the schema does not list takes the facts of the nearest listed field holding it when
    that field is a leaf, a list or a secret (a list's items, a secret's inside). A member an
    object does not list (which the schema refuses) is what the object states itself, or, in an
    object whose access its members make, create-time when a field below it is.
    """
    table = _table(schema)
    for end in range(len(path), 0, -1):
        found = table.get(path[:end])
        if found is None:
            continue
        if end == len(path):
            return found
        if found.sensitive or path[:end] not in _objects(schema):
            return replace(found, listed=False)
        return _unlisted(path[:end], schema)
    return Facts(listed=False)


def _unlisted(parent: JsonPath, schema: str) -> Facts:
    table, derived = _catalogue(schema)
    if parent not in derived:
        found = table[parent]
        return Facts(writable=found.writable, create_time=found.create_time, listed=False)
    below = [f for p, f in table.items() if p[: len(parent)] == parent and p != parent]
    return Facts(create_time=any(f.create_time and not f.writable for f in below), listed=False)


@cache
def _objects(schema: str) -> frozenset[JsonPath]:
    """The listed fields that are objects with listed members."""
    return frozenset(path[:-1] for path in _table(schema))
