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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from reconciler.load.schemaerrors import explain
from reconciler.model.errors import suggest as suggest  # one helper: "did you mean"
from reconciler.model.json import JsonLike, JsonObject, JsonValue, as_items
from reconciler.model.resources import JsonPath
from reconciler.model.schematree import COMMON_FILE as COMMON_FILE  # one home: the schema files
from reconciler.model.schematree import document, resolve
from reconciler.model.schematree import schema_dir as schema_dir

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError
    from referencing import Registry

__all__ = ["COMMON_FILE", "KIND_FILES", "load_schemas", "reset_defaults", "schema_dir", "suggest"]


KIND_FILES: dict[str, str] = {
    "Pipe": "pipe.schema.json",
    "Organization": "organization.schema.json",
    "Dashboard": "dashboard.schema.json",
    "ReversePrivateEndpoint": "reverse-private-endpoint.schema.json",
    "CdcScaling": "cdc-scaling.schema.json",
}
# A document's validity, as the compiled validator answers it.
Check = Callable[[object], bool]


@cache
# Any: the schema documents are walked by paths the repository's own schemas fix ($defs, properties);
# narrowing each step would add noise and catch nothing a schema test does not.
def load_schemas() -> dict[str, dict[str, Any]]:
    """Return every schema document by file name (which is also its ``$id``)."""
    return {name: document(name) for name in (COMMON_FILE, *KIND_FILES.values())}


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

    def walk(node: Any, doc: str, path: JsonPath) -> None:
        node, doc = resolve(node, doc)
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
