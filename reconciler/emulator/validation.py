"""Request-body validation, written independently of the reconciler's JSON Schemas.

A tiny combinator language describes each accepted body: ``obj`` rejects unknown fields and
checks required ones, ``integer`` accepts integral JSON numbers but not booleans, and so on.
Each validator returns the normalised value (integral floats become ints) or raises
``Invalid`` with the dotted path of the offending field. Each validator also carries the JSON
Schema of what it accepts (``Rule.schema``): the emulator's OpenAPI description
(``reconciler.emulator.openapi``) is built from these same objects, so the document and the
validation cannot drift apart. ``management`` turns ``Invalid`` into the management error
shape, ``BAD_REQUEST: settings.x must be …``; ``KEEP`` and ``ABSENT`` say what ``null`` asks
of an update. The bodies themselves are written with these combinators elsewhere:
``pipe_rules`` (shared pipe rules and checks), ``pipe_bodies``, ``create``, ``patch_bodies``
and ``databases`` (pipes), ``organization_bodies`` (the organization and dashboards).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from reconciler.emulator.protocol import ApiError

__all__: list[str] = []


Check = Callable[[Any, str], Any]


class Rule:
    """A validator: call it with ``(value, path)``; ``schema`` is the JSON Schema it enforces."""

    __slots__ = ("check", "schema")

    def __init__(self, check: Check, schema: dict[str, Any]) -> None:
        self.check = check
        self.schema = schema

    def __call__(self, value: Any, path: str) -> Any:
        return self.check(value, path)


Validator = Rule

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class Invalid(Exception):
    """A field failed validation: ``path`` is dotted (``tiles.0.x``), ``why`` a short reason."""

    def __init__(self, path: str, why: str, fields: frozenset[str] = frozenset()):
        super().__init__(f"{path} {why}")
        self.path = path or "body"
        self.why = why
        self.fields = fields  # the fields of the object that failed (to pick a oneOf branch)


def _join(path: str, key: str | int) -> str:
    return f"{path}.{key}" if path else str(key)


def string(min_len: int = 0, max_len: int | None = None, enum: Iterable[str] = ()) -> Validator:
    """A string, optionally length-bounded or restricted to an enumeration."""
    allowed = tuple(enum)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise Invalid(path, "must be a string")
        if allowed and value not in allowed:
            raise Invalid(path, "must be one of " + ", ".join(allowed))
        if len(value) < min_len or (max_len is not None and len(value) > max_len):
            if max_len is None:
                raise Invalid(path, f"must be at least {min_len} characters long")
            raise Invalid(path, f"must be between {min_len} and {max_len} characters long")
        return value

    schema: dict[str, Any] = {"type": "string"}
    if allowed:
        schema["enum"] = list(allowed)
    if min_len:
        schema["minLength"] = min_len
    if max_len is not None:
        schema["maxLength"] = max_len
    return Rule(check, schema)


def uuid_string() -> Validator:
    """A string in uuid form."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str) or not _UUID.fullmatch(value):
            raise Invalid(path, "must be a uuid string")
        return value

    return Rule(check, {"type": "string", "pattern": f"^{_UUID.pattern}$"})


def integer(lo: int | None = None, hi: int | None = None, multiple: int | None = None) -> Validator:
    """An integral JSON number (``5000.0`` is accepted as 5000; booleans are not numbers)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be an integer")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise Invalid(path, "must be an integer")
            value = int(value)
        _bounds(value, lo, hi, path)
        _multiple(value, multiple, path)
        return value

    return Rule(check, _bounded({"type": "integer"}, lo, hi, multiple))


def number(
    lo: float | None = None, hi: float | None = None, multiple: int | None = None
) -> Validator:
    """Any finite JSON number (not a boolean)."""

    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(path, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise Invalid(path, "must be a finite number")
        _bounds(value, lo, hi, path)
        _multiple(value, multiple, path)
        return value

    return Rule(check, _bounded({"type": "number"}, lo, hi, multiple))


def _bounded(
    schema: dict[str, Any], lo: float | None, hi: float | None, multiple: int | None = None
) -> dict[str, Any]:
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    if multiple is not None:
        schema["multipleOf"] = multiple
    return schema


def _multiple(value: float, multiple: int | None, path: str) -> None:
    if multiple is not None and value % multiple != 0:
        raise Invalid(path, f"must be a multiple of {multiple}")


def _bounds(value: float, lo: float | None, hi: float | None, path: str) -> None:
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise Invalid(path, f"must be between {lo} and {hi}")
    if lo is not None and value < lo:
        raise Invalid(path, f"must be at least {lo}")
    if hi is not None and value > hi:
        raise Invalid(path, f"must be at most {hi}")


def boolean() -> Validator:
    """A JSON boolean."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, bool):
            raise Invalid(path, "must be a boolean")
        return value

    return Rule(check, {"type": "boolean"})


class _Marker:
    """A value a validated body may carry that is not JSON: what ``null`` asks of the update."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# ``null`` for a field with no default of its own: KEEP leaves the stored value as it is (the
# service cannot be without it: a host, a port), ABSENT removes the field (a TLS host: the field
# no longer applies, and a field that does not apply is absent from answers, never null).
KEEP = _Marker("KEEP")
ABSENT = _Marker("ABSENT")


def merge(stored: dict[str, Any], changes: dict[str, Any]) -> None:
    """Apply validated ``changes`` to ``stored``: KEEP skips a field, ABSENT removes it."""
    for key, value in changes.items():
        if value is KEEP:
            continue
        if value is ABSENT:
            stored.pop(key, None)
        else:
            stored[key] = value


def given(changes: dict[str, Any]) -> dict[str, Any]:
    """The fields of validated ``changes`` that carry a value (not KEEP, ABSENT or None)."""
    return {k: v for k, v in changes.items() if v is not KEEP and v is not ABSENT and v is not None}


class Nullable(Rule):
    """``item``, or JSON ``null``, which the real service takes as "reset to the default".

    Validating ``null`` yields ``default`` itself, so the update that follows stores the
    service's default with no special case; ``default`` stays readable for descriptions of
    the API built from these structures (the schema says it too).
    """

    def __init__(self, item: Validator, default: Any) -> None:
        self.item = item
        self.default = default
        schema: dict[str, Any] = {"anyOf": [item.schema, {"type": "null"}]}
        if not isinstance(default, _Marker):
            schema["default"] = default
        super().__init__(self._nullable, schema)

    def _nullable(self, value: Any, path: str) -> Any:
        """The default for ``null``, else what ``item`` makes of ``value``."""
        return self.default if value is None else self.item(value, path)


def one_of(*shapes: tuple[str, Validator]) -> Validator:
    """Exactly one of several named object shapes, told apart by their field names."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        failures: list[tuple[int, Invalid]] = []
        for _, shape in shapes:
            try:
                return shape(value, path)
            except Invalid as exc:
                failures.append((sum(1 for key in value if key in exc.fields), exc))
        # Name the problem of the shape the body comes closest to, when it is recognisable.
        overlap, closest = max(failures, key=lambda f: f[0])
        if overlap:
            raise closest
        names = "; ".join(name for name, _ in shapes)
        raise Invalid(path, f"must be one of: {names}")

    # The first shape that fits wins, as ``anyOf`` says (the shapes' fields tell them apart).
    return Rule(check, {"anyOf": [shape.schema for _, shape in shapes]})


def array(item: Validator, unique: bool = False) -> Validator:
    """A JSON array whose every element passes ``item`` (all different when ``unique``)."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise Invalid(path, "must be an array")
        result = [item(element, _join(path, i)) for i, element in enumerate(value)]
        if unique:
            seen: list[Any] = []
            for i, element in enumerate(result):
                if element in seen:
                    raise Invalid(_join(path, i), "repeats an earlier item (items must be unique)")
                seen.append(element)
        return result

    schema: dict[str, Any] = {"type": "array", "items": item.schema}
    if unique:
        schema["uniqueItems"] = True
    return Rule(check, schema)


def obj(fields: dict[str, Validator], required: Iterable[str] = ()) -> Validator:
    """A JSON object with only the listed fields, the ``required`` ones present."""
    needed = tuple(required)

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise Invalid(path, "must be an object")
        known = frozenset(fields)
        for key in value:
            if key not in fields:
                raise Invalid(_join(path, key), "is not an allowed field", known)
        for key in needed:
            if key not in value:
                raise Invalid(_join(path, key), "is required", known)
        return {key: fields[key](element, _join(path, key)) for key, element in value.items()}

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: rule.schema for key, rule in fields.items()},
        "additionalProperties": False,
    }
    if needed:
        schema["required"] = list(needed)
    return Rule(check, schema)


def validated(
    schema: Validator, body: Any, not_object: str, invalid: Callable[[Invalid], str]
) -> dict[str, Any]:
    """The body validated by ``schema``, or a 400: ``not_object`` for a body that is no JSON
    object, ``invalid(error)`` naming the first bad field (each interface words its own)."""
    if not isinstance(body, dict):
        raise ApiError(400, not_object)
    try:
        result: dict[str, Any] = schema(body, "")
    except Invalid as exc:
        raise ApiError(400, invalid(exc)) from None
    return result


def management(schema: Validator, body: Any) -> dict[str, Any]:
    """The body validated by ``schema``, or the management 400 naming the first bad field."""
    return validated(
        schema, body, "Request body must be a JSON object", lambda e: f"{e.path} {e.why}"
    )
