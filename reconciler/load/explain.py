"""``explain``: what a manifest field is, from the JSON Schemas (as ``kubectl explain`` does).

A target is ``KIND`` or ``KIND.path.to.field`` (``Pipe.spec.settings.engine_max_threads``; the
``spec.`` may be left out). The schema is walked through ``$ref``s, list items and the
alternatives of a ``oneOf`` (a pipe's source kinds, a secret reference's two forms) by
``model.schematree``, the walk the reference pages and the field catalogue use too, and the
field is described by its type, bounds, allowed values, description and sub-fields. Whether
it is writable, create-time, required to create, an identity or a write-only secret comes from
the field catalogue for pipes and the organization (the schemas' ``x-reconcile``
annotations, through ``model.catalogue`` and ``model.fields`` — the same facts the planner
uses), from the kinds' own modules for endpoints and CDC scaling, and from the schema's own
"(expectation)" / "Read-only" wording for dashboards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.load.schema import KIND_FILES, suggest
from reconciler.model.catalogue import ALL, ORGANIZATION_FILE, facts
from reconciler.model.cdc import CDC
from reconciler.model.endpoints import ENDPOINT, WRITABLE
from reconciler.model.errors import ConfigError
from reconciler.model.fields import (
    PIPE_IDENTITY,
    SOURCE_KINDS,
    is_create_time_path,
    is_create_time_secret,
    is_secret_path,
    is_writable_pipe_path,
)
from reconciler.model.json import JsonLike, JsonMapping, JsonObject, JsonValue, as_items, as_mapping
from reconciler.model.resources import JsonPath
from reconciler.model.schematree import (
    Values,
    child,
    document,
    members,
    parts,
    resolve,
    through_items,
    type_name,
)

__all__ = ["explain", "render"]


@dataclass(frozen=True)
class Field:
    """One sub-field, listed under the explained field."""

    name: str
    type: str
    title: str
    required: bool


@dataclass(frozen=True)
class Explanation:
    """Everything ``explain`` says about one field."""

    kind: str
    path: str
    title: str
    description: str
    type: str
    access: str
    bounds: list[str] = field(default_factory=list)
    enum: list[JsonValue] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)

    def to_dict(self) -> JsonObject:
        """Return a JSON-friendly form."""
        return {
            "kind": self.kind,
            "path": self.path,
            "title": self.title,
            "description": self.description,
            "type": self.type,
            "access": self.access,
            "bounds": list[JsonValue](self.bounds),
            "enum": self.enum,
            "fields": [dict(f.__dict__) for f in self.fields],
        }


_BOUNDS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("pattern", "matches {}"),
)


def explain(target: str) -> Explanation:
    """Describe ``KIND[.path]``; raise ``ConfigError`` naming the unknown part."""
    head, _, rest = target.partition(".")
    kind = _kind(head)
    path: list[str] = [p for p in rest.split(".") if p] if rest else []
    file = KIND_FILES[kind]
    root = document(file)
    if path and path[0] not in as_mapping(root.get("properties")):
        path.insert(0, "spec")  # `Pipe.settings` means `Pipe.spec.settings`
    node, base = resolve(root, file)
    walked: list[str] = []
    for part in path:
        found = child(node, base, part)
        if found is None:
            choices = sorted(members(*through_items(node, base)))
            where = ".".join([kind, *walked]) or kind
            hint = suggest(part, choices)
            known = f"; its fields: {', '.join(choices)}" if choices else ""
            raise ConfigError(f"{where} has no field {part!r}{hint}{known}")
        node, base = found
        walked.append(part)
    return Explanation(
        kind=kind,
        path=".".join(walked),
        title=str(node.get("title", "")),
        description=_description(node, base),
        type=type_name(node, base, Values.BELOW),
        access=_access(kind, tuple(walked), node),
        bounds=[text.format(node[k]) for k, text in _BOUNDS if k in node],
        enum=_scalars([*as_items(node.get("enum")), *([node["const"]] if "const" in node else [])]),
        fields=_fields(node, base),
    )


def _kind(word: str) -> str:
    for kind in KIND_FILES:
        if word.lower() in (kind.lower(), kind.lower() + "s"):
            return kind
    raise ConfigError(
        f"unknown kind {word!r}{suggest(word, KIND_FILES)}: one of {', '.join(KIND_FILES)}"
    )


def _scalars(values: Sequence[JsonLike]) -> list[JsonValue]:
    """The listed values of an ``enum`` or ``const`` (the schemas list only scalars)."""
    return [v for v in values if v is None or isinstance(v, str | int | float | bool)]


def _description(node: JsonMapping, base: str) -> str:
    if node.get("description"):
        return str(node["description"])
    alternatives = parts(node, base)[1:]
    return " ".join(str(a.get("description", "")) for a, _ in alternatives).strip()


def _fields(node: JsonMapping, base: str) -> list[Field]:
    """The sub-fields (a list's: its items'), each with whether every value must state it."""
    found = members(*through_items(node, base))
    return [
        Field(name, type_name(sub, doc, Values.SPELLED), str(sub.get("title", "")), required)
        for name, (sub, doc, required) in found.items()
    ]


def _access(kind: str, path: JsonPath, node: JsonMapping) -> str:
    """Say how reconcile treats the field: identity, writable, expectation or secret."""
    if not path:
        return "the whole manifest"
    if path[0] in ("apiVersion", "kind"):
        return "format: fixed value, never sent"
    if path[0] == "metadata":
        return "local: names the resource in plans and state; never sent"
    spec = path[1:]
    if not spec:
        return "the desired state"
    wording = f"{node.get('title', '')} {node.get('description', '')}"
    if kind == "Pipe":
        return _pipe_access(spec) + _required_note(spec)
    if kind == ENDPOINT:
        if spec[0] in ("organizationId", "serviceId", "service"):
            return "identity: says which service the endpoint belongs to; never changed"
        if spec[0] == WRITABLE:
            return "writable: changed by the endpoint update (PATCH), the whole list"
        return (
            "create-time: sent when the endpoint is created; a difference needs --replace "
            "(delete and create again, never while a pipe uses it)"
        )
    if kind == CDC:
        if spec[0] in ("organizationId", "serviceId", "service"):
            return "identity: says which service's CDC scaling; never changed"
        return (
            "writable: changed by one PATCH of the stated fields (…/pipesCdcScaling) once the "
            "service has a database pipe"
        )
    if kind == "Organization":
        found = facts(spec, ORGANIZATION_FILE)
        if found.identity:
            return "identity: says which organization; never changed"
        if found.writable:
            return "writable: changed by the organization update (PATCH)"
    if "(expectation)" in wording or "Read-only" in wording:
        return "read-only: an expectation; the plan reports a mismatch but cannot change it"
    return "writable"


def _pipe_access(spec: JsonPath) -> str:
    """Say how reconcile treats a field of a pipe's spec, as the field catalogue files it."""
    if spec[0] in PIPE_IDENTITY:
        return "identity: says which pipe; never changed"
    if is_create_time_secret(spec):
        return (
            "sensitive, create-time: secret sent only when the pipe is created, never read "
            "back; a value other than the one this tool created the pipe with needs "
            "--replace; write {fromEnv: NAME} or {fromFile: PATH}, never the value"
        )
    if is_secret_path(spec):
        return (
            "sensitive, writable: write-only secret, sent when changed and never read back; "
            "write {fromEnv: NAME} or {fromFile: PATH}, never the value"
        )
    if is_writable_pipe_path(spec):
        return "writable: changed by the pipe update (PATCH)"
    # The run-state and scaling endpoints exist on servers that list pipes (not spec-only).
    if spec[0] == "state":
        return (
            "desired state: Running and Stopped are reached with the state command where "
            "the server has it; any other value, or a server without it: an expectation"
        )
    if spec[0] == "scaling":
        return (
            "writable: changed by the scaling request (PATCH …/scaling) where the server "
            "has it; else an expectation"
        )
    if is_create_time_path(spec):
        return (
            "create-time: sent when the pipe is created; on an existing pipe a difference "
            "needs --replace (delete and create again)"
        )
    return "read-only: an expectation; the plan reports a mismatch but cannot change it"


def _required_note(spec: JsonPath) -> str:
    """Say that a create needs the field, when the catalogue marks it ``requiredToCreate``."""
    found = facts(spec)
    if not found.listed or not found.required_to_create:
        return ""
    if ALL in found.required_to_create:
        return "; required to create the pipe"
    kinds = [k for k in SOURCE_KINDS if found.required_for(k)]
    return f"; required to create a pipe reading from {', '.join(kinds)}"


def render(item: Explanation) -> str:
    """Return the text ``reconcile explain`` prints."""
    lines = [f"KIND:     {item.kind}"]
    if item.path:
        title = f"  ({item.title})" if item.title else ""
        lines.append(f"FIELD:    {item.path}{title}")
    lines.append(f"TYPE:     {item.type}")
    lines.append(f"ACCESS:   {item.access}")
    if item.bounds:
        lines.append(f"BOUNDS:   {', '.join(item.bounds)}")
    if item.enum:
        lines.append(f"VALUES:   {', '.join(str(v) for v in item.enum)}")
    if item.description:
        lines += ["", "DESCRIPTION:", *_wrap(item.description, "    ")]
    if item.fields:
        lines += ["", "FIELDS:"]
        width = max(len(f.name) + (11 if f.required else 0) for f in item.fields)
        for f in item.fields:
            name = f"{f.name} (required)" if f.required else f.name
            lines.append(f"    {name.ljust(width)}  <{f.type}>  {f.title}".rstrip())
    return "\n".join(lines) + "\n"


def _wrap(text: str, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=96, initial_indent=indent, subsequent_indent=indent)
