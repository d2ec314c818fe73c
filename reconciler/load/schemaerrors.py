"""Human messages for manifests a JSON Schema rejects, built from jsonschema's errors.

``load.schema`` decides whether a document is valid; when it is not, jsonschema's
``Draft202012Validator.iter_errors`` errors come here and become messages a person
understands: an unknown field with a suggestion, the expected type, the allowed values, the
closest alternative of a ``oneOf``, a secret written as a value. A value under a secret field
is described by its type only.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from reconciler.model.catalogue import defined_pattern
from reconciler.model.errors import suggest
from reconciler.model.fields import SECRET_FIELD_NAMES
from reconciler.model.json import JsonValue, as_items
from reconciler.model.resources import JsonPath

if TYPE_CHECKING:
    from jsonschema import ValidationError

__all__: list[str] = []

SECRET_TITLE = "Secret reference"
SECRET_MESSAGE = "is a secret: write {fromEnv: NAME} or {fromFile: PATH}, never the value"


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
    for name, text in _PATTERN_NAMES.items():
        if defined_pattern(name) == pattern:
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
