"""Secret references and resolved secrets.

Secrets never appear literally in a manifest: a secret field holds ``{fromEnv: NAME}`` or
``{fromFile: PATH}`` (relative to the manifest's directory; confined and bounded by
``reconciler.model.secretfiles``). They are resolved at plan/apply
time into ``Secret`` objects whose ``repr``/``str`` never show the value, and compared with the
state file through an HMAC fingerprint, so neither plans, state nor logs ever hold a secret.
An empty value (a CI variable that expanded to nothing, an empty file) is refused like a
missing one unless the reference says ``allowEmpty: true``. ``unresolved`` checks every
reference of a set of resources at once, before anything is sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeAlias, TypeGuard, cast

from reconciler.model.errors import ManifestError
from reconciler.model.fields import SECRET_FIELDS
from reconciler.model.json import JsonLike, JsonScalar, JsonValue
from reconciler.model.resources import JsonPath, Resource, format_path
from reconciler.model.secretfiles import SecretFileRefused, read_secret_file

__all__ = [
    "REDACTED",
    "SECRET_FIELDS",
    "SecretTree",
    "fingerprint",
    "holds_secret",
    "is_reference",
    "redact",
    "resolve_pipe_secrets",
    "reveal",
    "secret_paths",
    "unresolved",
    "variables",
]


REDACTED = "(sensitive)"
# The variables ``{fromEnv}`` references read: the process environment, unless the run says
# otherwise (``variables``) — a run over several environments gives each its own env file's
# variables without writing any of them into ``os.environ``. A context variable, so that each
# asyncio task (one environment's plan) sees the mapping it was started with.
_VARIABLES: ContextVar[Mapping[str, str] | None] = ContextVar("secret_variables", default=None)


@contextlib.contextmanager
def variables(environ: Mapping[str, str]) -> Iterator[None]:
    """Make ``{fromEnv}`` references resolved inside the block read ``environ``."""
    token = _VARIABLES.set(environ)
    try:
        yield
    finally:
        _VARIABLES.reset(token)


class Secret:
    """A resolved secret value that refuses to show itself."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """Return the secret itself; only the request body builder calls this."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(***)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and hmac.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(("Secret", len(self._value)))


# A spec subtree once its references are resolved: JSON with ``Secret`` leaves (read-only view).
SecretTree: TypeAlias = "JsonScalar | Secret | Mapping[str, SecretTree] | Sequence[SecretTree]"

# The key of a reference that accepts an empty value.
ALLOW_EMPTY = "allowEmpty"


def is_reference(value: object) -> TypeGuard[Mapping[str, JsonLike]]:
    """Tell whether ``value`` is a ``{fromEnv}``/``{fromFile}`` reference (``allowEmpty`` aside)."""
    if not isinstance(value, Mapping):
        return False
    keys = set(value) - {ALLOW_EMPTY}
    return keys in ({"fromEnv"}, {"fromFile"})


def holds_secret(value: object) -> bool:
    """Tell whether ``value`` is or contains a resolved ``Secret`` or a secret reference."""
    if isinstance(value, Secret) or is_reference(value):
        return True
    if isinstance(value, Mapping):
        return any(holds_secret(v) for v in value.values())
    return False


def secret_paths(resource: Resource) -> Iterator[JsonPath]:
    """Yield the spec paths of every secret subtree a pipe resource states."""
    if resource.kind != "Pipe":
        return
    source = resource.spec.get("source")
    if not isinstance(source, Mapping):
        return
    for kind, subpaths in SECRET_FIELDS.items():
        for sub in subpaths:
            parent = _at(source.get(kind), sub[:-1])
            if isinstance(parent, Mapping) and sub[-1] in parent:
                yield ("source", kind, *sub)


def _at(value: object, path: JsonPath) -> object:
    """Return the value at ``path`` inside ``value`` (None when a step is not a mapping)."""
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _resolve_ref(resource: Resource, path: JsonPath, ref: Mapping[str, JsonLike]) -> Secret:
    field = format_path(("spec", *path))
    empty_ok = ref.get(ALLOW_EMPTY) is True
    if "fromEnv" in ref:
        where = resource.locate_spec(*path, "fromEnv")
        name = str(ref["fromEnv"])
        chosen = _VARIABLES.get()
        value = (os.environ if chosen is None else chosen).get(name)
        if value is None:
            raise ManifestError(where, field, f"environment variable {name} is not set")
        if not value and not empty_ok:
            raise ManifestError(where, field, f"environment variable {name} is empty{_EMPTY_HINT}")
        return Secret(value)
    where = resource.locate_spec(*path, "fromFile")
    # Relative to the file that wrote the reference: an environment's overlay, when it set it
    # (a merged document's locator knows which file wrote each value).
    file_of = getattr(resource.locator, "file_of", None)
    written_in = file_of(("spec", *path)) if callable(file_of) else resource.file
    target = Path(str(written_in)).parent / str(ref["fromFile"])
    try:
        value = read_secret_file(target)
    except SecretFileRefused as exc:
        raise ManifestError(where, field, str(exc)) from None
    if not value and not empty_ok:
        raise ManifestError(where, field, f"secret file {target} is empty{_EMPTY_HINT}")
    return Secret(value)


_EMPTY_HINT = " (an empty secret is refused; add allowEmpty: true to the reference if it is meant)"


def unresolved(resources: Iterable[Resource]) -> list[ManifestError]:
    """Return every secret reference of ``resources`` that cannot be resolved, in file order.

    Each missing or empty variable and each unreadable or empty file is one error located at
    its reference, so a run reports them all at once before sending anything.
    """
    errors: list[ManifestError] = []
    for resource in resources:
        for path in secret_paths(resource):
            value = cast(JsonLike, _at(resource.spec, path))
            errors.extend(_tree_errors(resource, path, value))
    return errors


def _tree_errors(resource: Resource, path: JsonPath, value: JsonLike) -> Iterator[ManifestError]:
    if is_reference(value):
        try:
            _resolve_ref(resource, path, value)
        except ManifestError as exc:
            yield exc
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _tree_errors(resource, (*path, k), v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _tree_errors(resource, (*path, i), v)


def resolve_tree(resource: Resource, path: JsonPath, value: JsonLike) -> SecretTree:
    """Replace every reference inside ``value`` by a ``Secret`` (raising ``ManifestError``)."""
    if is_reference(value):
        return _resolve_ref(resource, path, value)
    if isinstance(value, Mapping):
        return {k: resolve_tree(resource, (*path, k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_tree(resource, (*path, i), v) for i, v in enumerate(value)]
    return value


def reveal(value: SecretTree) -> JsonValue:
    """Return ``value`` with every ``Secret`` replaced by its plain text (for the wire only)."""
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [reveal(v) for v in value]


def redact(value: SecretTree) -> JsonValue:
    """Return ``value`` with every ``Secret`` replaced by a fixed marker (for output)."""
    if isinstance(value, Secret):
        return REDACTED
    if isinstance(value, Mapping):
        return {k: redact(v) for k, v in value.items()}
    if isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [redact(v) for v in value]


def fingerprint(key: bytes, value: SecretTree) -> str:
    """Return the HMAC-SHA256 of a resolved secret subtree, as ``hmac-sha256:<hex>``."""
    canonical = json.dumps(reveal(value), sort_keys=True, separators=(",", ":"))
    digest = hmac.new(key, canonical.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"hmac-sha256:{digest}"


def resolve_pipe_secrets(resource: Resource) -> dict[str, SecretTree]:
    """Return the pipe's spec with every secret reference resolved to a ``Secret``."""
    spec: dict[str, Any] = dict(resource.spec)
    for path in secret_paths(resource):
        spec = _replaced(spec, path, path, resource)
    return spec


def _replaced(
    mapping: Mapping[str, Any], rest: JsonPath, path: JsonPath, resource: Resource
) -> dict[str, Any]:
    """Return a copy of ``mapping`` whose secret at ``rest`` is resolved (``path`` is its full
    spec path); copies only the mappings on the way: the resource's own spec is never changed."""
    out = dict(mapping)
    key = str(rest[0])
    if len(rest) == 1:
        out[key] = resolve_tree(resource, path, out[key])
    else:
        out[key] = _replaced(out[key], rest[1:], path, resource)
    return out
