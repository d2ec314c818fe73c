"""A compiler from the manifest JSON Schemas to plain Python checks.

jsonschema stays the authority on what is valid and on error messages, but validating every
document through it costs about half a millisecond per pipe. The schemas use a small set of
keywords, so each is compiled here into closures that only answer "valid or not" (and, for
``integer`` fields, a normaliser that turns integral floats into ints). A keyword the compiler
does not implement raises ``Unsupported`` and the caller falls back to jsonschema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reconciler.model.json import JsonValue

# A compiled check takes any parsed value (a wrong type is simply invalid); a fix returns it normalised.
Check = Callable[[object], bool]
Fix = Callable[[JsonValue], JsonValue]

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "$comment",
        "title",
        "description",
        "examples",
        "default",
        "deprecated",
        # A value the service refuses, with the hint said instead of the bare enum list.
        "x-refused",
        # The field catalogue's facts (``model.catalogue``): no bearing on validity.
        "x-reconcile",
    }
)


class Unsupported(Exception):
    """The fast compiler met a keyword it does not implement (jsonschema is used instead)."""


class Compiler:
    """Compiles schemas into closures: a validity check and an integer normaliser."""

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        self.schemas = schemas
        self.checks: dict[tuple[str, str], Check] = {}
        self.fixes: dict[tuple[str, str], Fix | None] = {}

    def _resolve(self, ref: str, base: str) -> tuple[dict[str, Any], str, str]:
        """Return the schema a ``$ref`` names, its document and pointer."""
        doc, _, pointer = ref.partition("#")
        doc = doc or base
        if doc not in self.schemas:
            raise Unsupported(f"$ref to unknown document {doc}")
        node: Any = self.schemas[doc]
        for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node, doc, pointer

    def _ref_check(self, ref: str, base: str) -> Check:
        target, doc, pointer = self._resolve(ref, base)
        key = (doc, pointer)
        if key not in self.checks:
            cell: list[Check] = []
            self.checks[key] = lambda x: cell[0](x)
            cell.append(self.check(target, doc))
            self.checks[key] = cell[0]
        return self.checks[key]

    def check(self, node: JsonValue, base: str) -> Check:
        """Return a function telling whether an instance is valid under ``node`` (a schema)."""
        if node is True:
            return lambda x: True
        if node is False:
            return lambda x: False
        if not isinstance(node, dict):
            raise Unsupported(f"a schema that is neither an object nor a boolean: {node!r}")
        schema: dict[str, Any] = node  # walked by the keywords checked below
        unknown = set(schema) - _ANNOTATIONS - _HANDLED
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
        checks: list[Check] = []
        if "$ref" in schema:
            checks.append(self._ref_check(schema["$ref"], base))
        if "type" in schema:
            checks.append(_type_check(schema["type"]))
        if "enum" in schema:
            values = schema["enum"]
            if not all(isinstance(v, str) or v is None for v in values):
                raise Unsupported("non-string enum")
            allowed = frozenset(values)
            # null is allowed where the enumeration lists it ("reset to the default").
            checks.append(lambda x: (x is None or type(x) is str) and x in allowed)
        if "const" in schema:
            const = schema["const"]
            if not isinstance(const, str):
                raise Unsupported("non-string const")
            checks.append(lambda x: type(x) is str and x == const)
        checks.extend(_number_checks(schema))
        checks.extend(_string_checks(schema))
        if {
            "properties",
            "required",
            "additionalProperties",
            "minProperties",
            "maxProperties",
        } & set(schema):
            checks.append(self._object_check(schema, base))
        if {"items", "minItems", "maxItems", "uniqueItems"} & set(schema):
            checks.append(self._array_check(schema, base))
        if "oneOf" in schema:
            alternatives = [self.check(s, base) for s in schema["oneOf"]]
            checks.append(lambda x: sum(1 for c in alternatives if c(x)) == 1)
        if "anyOf" in schema:
            options = [self.check(s, base) for s in schema["anyOf"]]
            checks.append(lambda x: any(c(x) for c in options))
        if len(checks) == 1:
            return checks[0]

        def all_of(x: Any) -> bool:
            for c in checks:  # noqa: SIM110 - a plain loop is faster than all() on the hot path
                if not c(x):
                    return False
            return True

        return all_of

    def _object_check(self, schema: dict[str, Any], base: str) -> Check:
        props = {k: self.check(v, base) for k, v in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        extra_check = None if isinstance(extra, bool) else self.check(extra, base)
        closed = extra is False
        low = schema.get("minProperties", 0)
        high = schema.get("maxProperties")

        def check(x: Any) -> bool:
            if type(x) is not dict:
                return True
            for name in required:
                if name not in x:
                    return False
            if not low <= len(x) or (high is not None and len(x) > high):
                return False
            for k, v in x.items():
                c = props.get(k)
                if c is not None:
                    if not c(v):
                        return False
                elif closed or (extra_check is not None and not extra_check(v)):
                    return False
            return True

        return check

    def _array_check(self, schema: dict[str, Any], base: str) -> Check:
        item = self.check(schema["items"], base) if "items" in schema else None
        low = schema.get("minItems", 0)
        high = schema.get("maxItems")
        unique = schema.get("uniqueItems", False)

        def check(x: Any) -> bool:
            if type(x) is not list:
                return True
            if len(x) < low or (high is not None and len(x) > high):
                return False
            if unique and len({json.dumps(v, sort_keys=True) for v in x}) < len(x):
                return False
            return item is None or all(item(v) for v in x)

        return check

    def fix(self, node: JsonValue, base: str) -> Fix | None:
        """Return a function turning integral floats into ints where ``node`` (a schema) says integer."""
        if not isinstance(node, dict):
            return None
        schema: dict[str, Any] = node
        if "$ref" in schema:
            target, doc, pointer = self._resolve(schema["$ref"], base)
            key = (doc, pointer)
            if key not in self.fixes:
                self.fixes[key] = None  # a recursive reference normalises nothing more
                self.fixes[key] = self.fix(target, doc)
            return self.fixes[key]
        types = schema.get("type")
        if types == "integer" or (isinstance(types, list) and "integer" in types):
            return lambda x: int(x) if type(x) is float and x.is_integer() else x
        props = {k: self.fix(v, base) for k, v in schema.get("properties", {}).items()}
        prop_fixes = {k: f for k, f in props.items() if f is not None}
        item_fix = self.fix(schema["items"], base) if "items" in schema else None
        if not prop_fixes and item_fix is None:
            return None

        def fix(x: Any) -> Any:
            if prop_fixes and type(x) is dict:
                for k, f in prop_fixes.items():
                    if k in x:
                        x[k] = f(x[k])
            elif item_fix is not None and type(x) is list:
                x[:] = [item_fix(v) for v in x]
            return x

        return fix


_HANDLED = frozenset(
    {
        "$ref",
        "type",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "oneOf",
        "anyOf",
    }
)


_TYPES: dict[str, Check] = {
    "integer": lambda x: type(x) is int or (type(x) is float and x.is_integer()),
    "number": lambda x: type(x) is int or type(x) is float,
    "string": lambda x: type(x) is str,
    "boolean": lambda x: type(x) is bool,
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "null": lambda x: x is None,
}
_NEVER: Check = lambda x: False  # noqa: E731 - an unknown type name matches nothing


def _type_check(types: str | list[str]) -> Check:
    # One predicate per type name, chosen here: the check runs for every value of every
    # manifest, so it builds nothing per call.
    names = [types] if isinstance(types, str) else list(types)
    predicates: list[Check] = [_TYPES.get(n, _NEVER) for n in names]
    if len(predicates) == 1:
        return predicates[0]
    if len(predicates) == 2:
        first, second = predicates
        return lambda x: first(x) or second(x)
    return lambda x: any(p(x) for p in predicates)


def _bound_check(keyword: str, bound: Any) -> Check:
    ops: dict[str, Callable[[Any], bool]] = {
        "minimum": lambda x: x >= bound,
        "maximum": lambda x: x <= bound,
        "exclusiveMinimum": lambda x: x > bound,
        "exclusiveMaximum": lambda x: x < bound,
        "multipleOf": lambda x: x % bound == 0,
    }
    ok = ops[keyword]
    return lambda x: (type(x) is not int and type(x) is not float) or ok(x)


def _number_checks(schema: dict[str, Any]) -> Iterator[Check]:
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if keyword in schema:
            yield _bound_check(keyword, schema[keyword])


def _string_checks(schema: dict[str, Any]) -> Iterator[Check]:
    if "minLength" in schema:
        low = schema["minLength"]
        yield lambda x: type(x) is not str or len(x) >= low
    if "maxLength" in schema:
        high = schema["maxLength"]
        yield lambda x: type(x) is not str or len(x) <= high
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        yield lambda x: type(x) is not str or search(x) is not None
