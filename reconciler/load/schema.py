"""JSON Schemas of the manifest kinds: loading, validating, and human error messages.

The schemas in ``schemas/`` (Draft 2020-12, also used by editors) are the single source of
truth. Two stock validators read them: jsonschema-rs (compiled) answers "valid or not" for
every document, about 20 microseconds a pipe, which keeps a plan of 10,000 manifests within
its guard (``bench/plan_scale.py`` row 4); jsonschema (pure Python, ~0.5 ms a pipe and
~0.1 s to import) is the authority on errors and runs only on a document the first rejects.
Its ``Draft202012Validator.iter_errors`` errors are turned into messages a person
understands (unknown field with a suggestion, expected type, allowed values, the closest
alternative of a ``oneOf``). Integral floats where the schema says ``integer`` become ints
(``KindSchema.normalise``), found by the same validator with a stricter ``integer``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from reconciler.model.catalogue import COMMON_FILE as COMMON_FILE  # one home: the schema files
from reconciler.model.catalogue import schema_dir as schema_dir
from reconciler.model.errors import suggest as suggest  # one helper: "did you mean"
from reconciler.model.fields import SECRET_FIELD_NAMES
from reconciler.model.json import JsonLike, JsonObject, JsonValue, as_items
from reconciler.model.resources import JsonPath

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError
    from referencing import Registry

__all__ = [
    "COMMON_FILE",
    "KIND_FILES",
    "compiled_check",
    "describe",
    "explain",
    "json_validator",
    "kind_schema",
    "load_schemas",
    "message_for",
    "reset_defaults",
    "schema_dir",
    "suggest",
]


KIND_FILES: dict[str, str] = {
    "Pipe": "pipe.schema.json",
    "Organization": "organization.schema.json",
    "Dashboard": "dashboard.schema.json",
    "ReversePrivateEndpoint": "reverse-private-endpoint.schema.json",
    "CdcScaling": "cdc-scaling.schema.json",
}
SECRET_TITLE = "Secret reference"
SECRET_MESSAGE = "is a secret: write {fromEnv: NAME} or {fromFile: PATH}, never the value"

# A document's validity, as the compiled validator answers it.
Check = Callable[[object], bool]
_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean (true or false)",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}
_PATTERN_NAMES = {
    "uuid": "is not a valid UUID (expected the form 0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61)",
    "resourceName": (
        "is not a valid name: use lower-case letters, digits, '.', '_' and '-', starting and"
        " ending with a letter or digit, at most 253 characters"
    ),
}
_ENV_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"
_TIMESTAMP_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$"


@cache
# Any: the schema documents are walked by paths the repository's own schemas fix ($defs, properties);
# narrowing each step would add noise and catch nothing a schema test does not.
def load_schemas() -> dict[str, dict[str, Any]]:
    """Return every schema document by file name (which is also its ``$id``)."""
    directory = schema_dir()
    names = [COMMON_FILE, *KIND_FILES.values()]
    return {name: json.loads((directory / name).read_text(encoding="utf-8")) for name in names}


@cache
def json_validator(kind: str) -> Draft202012Validator:
    """Return the jsonschema ``Draft202012Validator`` of ``kind`` (imported only when needed)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schemas()[KIND_FILES[kind]], registry=_registry())


@cache
def _registry() -> Registry[Any]:
    """The schema documents by ``$id``, for jsonschema's ``$ref`` resolution."""
    from referencing import Registry, Resource

    return Registry().with_resources(
        (name, Resource.from_contents(doc)) for name, doc in load_schemas().items()
    )


@cache
def reset_defaults(kind: str = "Pipe") -> dict[JsonPath, JsonValue]:
    """Spec paths where ``null`` means "reset to the service's default", and that default.

    Read from the schema itself: a property that admits ``null`` (in its ``type`` or its
    ``enum``) names the service's default in its ``default`` annotation (absent: unset).
    """
    schemas = load_schemas()
    file = KIND_FILES[kind]
    root: Any = schemas[file]["$defs"]["spec"] if kind == "Pipe" else schemas[file]
    found: dict[JsonPath, JsonValue] = {}

    def resolve(node: Any, doc: str) -> tuple[Any, str]:
        while isinstance(node, dict) and "$ref" in node:
            target, _, pointer = str(node["$ref"]).partition("#")
            doc = target or doc
            node = schemas[doc]
            for part in [p for p in pointer.split("/") if p]:
                node = node[part]
        return node, doc

    def walk(node: Any, doc: str, path: JsonPath) -> None:
        node, doc = resolve(node, doc)
        if not isinstance(node, dict):
            return
        types = node.get("type")
        nullable = (
            (isinstance(types, list) and "null" in types)
            or None in node.get("enum", [0])
            or any(b == {"type": "null"} for b in node.get("anyOf", []))
        )
        if path and nullable:
            found[path] = node.get("default")
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, doc, (*path, key))

    walk(root, file, ())
    return found


# Any: schema documents are JSON walked by the validator, not by this code.
def compiled_check(schema: JsonObject, documents: dict[str, dict[str, Any]]) -> Check:
    """Return jsonschema-rs's validity check of ``schema`` (its ``$ref``s found in ``documents``)."""
    import jsonschema_rs

    def retrieve(uri: str) -> dict[str, Any]:
        return documents[uri.rsplit("/", 1)[-1]]

    is_valid = jsonschema_rs.Draft202012Validator(schema, retriever=retrieve).is_valid

    def check(doc: object) -> bool:
        try:
            return bool(is_valid(doc))
        except (ValueError, TypeError, OverflowError):
            # Not JSON (a YAML date, an integer beyond 64 bits): jsonschema says what is wrong.
            return False

    return check


@cache
def _strict_validator(kind: str) -> Draft202012Validator:
    """The validator of ``kind`` with ``integer`` meaning an int only (not 5.0)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, x: type(x) is int
    )
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    return strict(load_schemas()[KIND_FILES[kind]], registry=_registry())


def _has_integral_float(doc: object) -> bool:
    stack = [doc]
    while stack:
        value = stack.pop()
        if type(value) is float and value.is_integer():
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _float_errors(errors: Iterable[ValidationError]) -> Iterator[JsonPath]:
    """Paths of integral floats where a schema (or one alternative of it) says integer."""
    for error in errors:
        types = as_items(error.validator_value) if error.validator == "type" else []
        value = error.instance
        if "integer" in types and type(value) is float and value.is_integer():
            yield tuple(error.absolute_path)
        yield from _float_errors(error.context or ())


@dataclass(frozen=True)
class KindSchema:
    """One kind's schema with its two validators: the compiled check and the authority."""

    kind: str
    schema: JsonObject
    fast_check: Check

    @property
    def validator(self) -> Draft202012Validator:
        """Return the jsonschema validator of this kind (the authority on errors)."""
        return json_validator(self.kind)

    def errors(self, doc: JsonLike) -> list[tuple[JsonPath, str]]:
        """Return ``(path, message)`` for every problem in ``doc`` (empty when valid)."""
        if self.fast_check(doc):
            return []
        return explain(self.validator.iter_errors(doc))

    # Any: the document is edited in place along paths the validator found, of any shape.
    def normalise(self, doc: Any) -> None:
        """Turn integral floats into ints, in place, wherever the schema says ``integer``."""
        if not _has_integral_float(doc):
            return
        for path in list(_float_errors(_strict_validator(self.kind).iter_errors(doc))):
            if not path:
                continue
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]] = int(parent[path[-1]])


@cache
def kind_schema(kind: str) -> KindSchema:
    """Return the schema of ``kind`` with its validators (built once per process)."""
    schemas = load_schemas()
    schema = schemas[KIND_FILES[kind]]
    return KindSchema(kind, schema, compiled_check(schema, schemas))


# ----------------------------------------------------------------------------- messages


def _secret(path: JsonPath) -> bool:
    """Tell whether a value at ``path`` may be a secret (a reference's own fields are not)."""
    if path and path[-1] in ("fromEnv", "fromFile", "allowEmpty"):
        return False
    return any(part in SECRET_FIELD_NAMES for part in path)


def describe(value: object, hide: bool = False) -> str:
    """Describe a value's type (and, unless ``hide``, the value) for a message."""
    if isinstance(value, bool):
        kind, text = "boolean", "true" if value else "false"
    elif isinstance(value, int | float):
        kind, text = ("integer" if isinstance(value, int) else "number"), repr(value)
    elif isinstance(value, str):
        kind, text = "string", repr(value)
    elif value is None:
        return "null"
    elif isinstance(value, dict):
        return "a mapping"
    elif isinstance(value, list):
        return "a list"
    else:
        return type(value).__name__
    return f"a {kind}" if hide else f"{kind} {text}"


def _show(value: object, hide: bool) -> str:
    if hide:
        return "the value"
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return repr(value)
    return describe(value)


def explain(errors: Iterable[ValidationError]) -> list[tuple[JsonPath, str]]:
    """Turn jsonschema errors into ``(path, message)`` pairs a person understands."""
    out: list[tuple[JsonPath, str]] = []
    seen: set[tuple[JsonPath, str]] = set()
    for error in errors:
        for item in _explain_one(error):
            if item not in seen:
                seen.add(item)
                out.append(item)
    return out


def _explain_one(error: Any) -> list[tuple[JsonPath, str]]:
    path: JsonPath = tuple(error.absolute_path)
    hide = _secret(path)
    keyword = error.validator
    value = error.validator_value
    instance = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if keyword == "additionalProperties":
        known = schema.get("properties", {})
        return [
            (
                (*path, str(key)),
                f"unknown field '{key}'"
                + (
                    suggest(key, known)
                    or (" (ids are assigned by the service)" if key == "id" else "")
                    or (f" (allowed: {', '.join(known)})" if known else "")
                ),
            )
            for key in instance
            if key not in known
        ]
    if keyword == "required":
        missing = [name for name in value if name not in instance]
        names = ", ".join(f"'{m}'" for m in missing)
        return [(path, f"missing required field{'s' if len(missing) > 1 else ''} {names}")]
    if keyword in ("oneOf", "anyOf"):
        recognised = _recognised_branch(error)
        if recognised is not None:
            return [item for sub in recognised for item in _explain_one(sub)]
        return [(path, _explain_alternatives(error, schema, hide))]
    refused = schema.get("x-refused", {})
    if keyword == "enum" and isinstance(instance, str) and instance in refused:
        # A value people reach for that the service lacks: say what to do instead.
        return [(path, f"{instance} is not accepted: {refused[instance]}")]
    return [(path, message_for(keyword, value, instance, hide))]


def _recognised_branch(error: Any) -> list[Any] | None:
    """The errors of the one alternative that knows every field of the mapping, if only one
    does (``credentials: {username, password}`` is the user/password shape, whatever else is
    wrong in it): its own errors say more than "matches none of …"."""
    if not error.context:
        return None
    by_branch: dict[int, list[Any]] = {}
    for sub in error.context:
        by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
    branches = list(error.validator_value)
    nulls = [i for i, b in enumerate(branches) if b == {"type": "null"}]
    if len(branches) == 2 and len(nulls) == 1:
        # "X or null" (null resets to the default): what is wrong is what is wrong with X.
        return by_branch.get(1 - nulls[0])
    if not isinstance(error.instance, dict):
        return None
    if len(by_branch) != len(error.validator_value):
        return None
    fitting = [
        errs
        for errs in by_branch.values()
        if not any(e.validator == "additionalProperties" and not e.relative_path for e in errs)
    ]
    return fitting[0] if len(fitting) == 1 else None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _min_length(value: Any, instance: Any, shown: str) -> str:
    if value == 1:
        return "must not be empty"
    return f"is too short: {len(instance)} characters, at least {value}"


def _repeated(items: Any) -> str:
    seen: list[Any] = []
    for item in items if isinstance(items, list) else ():
        if item in seen:
            return repr(item)
        seen.append(item)
    return "an item"


# keyword -> message from (the keyword's schema value, the instance, the instance as shown).
_MESSAGES: dict[str, Callable[[Any, Any, str], str]] = {
    "const": lambda value, instance, shown: f"must be {value!r}, got {shown}",
    "maximum": lambda value, instance, shown: f"{shown} is greater than the maximum of {value}",
    "minimum": lambda value, instance, shown: f"{shown} is less than the minimum of {value}",
    "exclusiveMaximum": lambda value, instance, shown: f"{shown} must be less than {value}",
    "exclusiveMinimum": lambda value, instance, shown: f"{shown} must be greater than {value}",
    "multipleOf": lambda value, instance, shown: f"{shown} is not a multiple of {value}",
    "minLength": _min_length,
    "maxLength": lambda value, instance, shown: (
        f"is too long: {len(instance)} characters, at most {value}"
    ),
    "pattern": lambda value, instance, shown: f"{shown} {_pattern_message(value)}",
    "minItems": lambda value, instance, shown: f"needs at least {_plural(value, 'item')}",
    "maxItems": lambda value, instance, shown: (
        f"has {len(instance)} items, at most {value} allowed"
    ),
    "uniqueItems": lambda value, instance, shown: f"lists {_repeated(instance)} more than once",
    "minProperties": lambda value, instance, shown: f"needs at least {_plural(value, 'field')}",
    "maxProperties": lambda value, instance, shown: (
        f"has {len(instance)} fields, at most {value} allowed"
    ),
}


def message_for(keyword: str, value: JsonValue, instance: object, hide: bool = False) -> str:
    """Return the message for one failed keyword (``value`` is the keyword's schema value)."""
    shown = _show(instance, hide)
    if keyword == "type":
        names = [value] if isinstance(value, str) else [str(n) for n in as_items(value)]
        if len(names) > 1 and instance is not None:
            # null only resets a field to its default: naming it would only distract.
            names = [n for n in names if n != "null"]
        expected = " or ".join(_TYPE_NAMES.get(n, n) for n in names)
        return f"expected {expected}, got {describe(instance, hide)}"
    if keyword == "enum":
        allowed = ", ".join(str(v) for v in as_items(value))
        hint = "" if hide else suggest(instance, as_items(value))
        return f"{shown} is not one of the allowed values: {allowed}{hint}"
    if keyword in _MESSAGES:
        return _MESSAGES[keyword](value, instance, shown)
    return "is not valid here" if hide else f"{shown} is not valid here ({keyword})"


def _pattern_message(pattern: str) -> str:
    defs = load_schemas()[COMMON_FILE]["$defs"]
    for name, text in _PATTERN_NAMES.items():
        if defs[name].get("pattern") == pattern:
            return text
    if pattern == _ENV_PATTERN:
        return "is not a valid environment variable name (letters, digits and '_')"
    if pattern == _TIMESTAMP_PATTERN:
        return "does not have the form YYYY-MM-DDTHH:MM"
    return f"does not match the pattern {pattern}"


def _explain_alternatives(error: Any, schema: dict[str, Any], hide: bool) -> str:
    """Say why a ``oneOf``/``anyOf`` failed: which alternative was closest, and why."""
    branches: list[Any] = list(error.validator_value)
    instance = error.instance
    # "exactly one of these keys": branches that only require one property each
    if all(
        isinstance(b, dict) and set(b) <= {"title", "description", "required"} for b in branches
    ):
        keys = [name for b in branches for name in b.get("required", [])]
        present = [k for k in keys if isinstance(instance, dict) and k in instance]
        listed = ", ".join(keys[:-1]) + f" or {keys[-1]}" if len(keys) > 1 else keys[0]
        if not present:
            return f"needs exactly one of {listed}, found none"
        return f"needs exactly one of {listed}, found {' and '.join(present)}"
    if schema.get("title") == SECRET_TITLE and not isinstance(instance, dict):
        return SECRET_MESSAGE
    titles = [str(b.get("title", f"#{i + 1}")) for i, b in enumerate(branches)]
    by_branch: dict[int, list[Any]] = {i: [] for i in range(len(branches))}
    for sub in error.context or ():
        by_branch[sub.relative_schema_path[0]].append(sub)
    failing = {i: errs for i, errs in by_branch.items() if errs}
    if len(failing) < len(branches):
        matched = [titles[i] for i in by_branch if not by_branch[i]]
        return (
            f"matches more than one alternative ({', '.join(matched)}); it must match exactly one"
        )

    def score(i: int) -> tuple[float, int]:
        errs = failing[i]
        wrong_type = any(e.validator == "type" and not e.relative_path for e in errs)
        props = branches[i].get("properties", {}) if isinstance(branches[i], dict) else {}
        keys = list(instance) if isinstance(instance, dict) else []
        likeness = max(
            (difflib.SequenceMatcher(None, str(k), p).ratio() for k in keys for p in props),
            default=0.0,
        )
        depth = max(len(e.relative_path) for e in errs)
        return (len(errs) + 10 * wrong_type - likeness, -depth)

    best = min(failing, key=score)
    reasons = []
    for sub in failing[best]:
        for sub_path, message in _explain_one(sub):
            rel = sub_path[len(error.absolute_path) :]
            prefix = ".".join(str(p) for p in rel)
            reasons.append(
                f"{prefix}: {message}" if prefix and not message.startswith("unknown") else message
            )
    alternatives = " or ".join(titles)
    return f"matches none of {alternatives}; closest is {titles[best]}: {'; '.join(reasons)}"
