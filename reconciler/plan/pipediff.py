"""The managed-field walk of a pipe: which of the fields its manifest states differ live.

Only *managed* fields are compared: the leaves a manifest states. The pipe's spec is walked
leaf by leaf beside the live object; arrays are compared whole (their items on the keys the
desired items state, so that server-assigned ids inside items are not drift); table mappings
are a set keyed by identity (``diff.diff_keyed_set``) and become add/remove changes. Write-only
secrets are compared through fingerprints recorded in state; ``null`` resets a field to the
service's default; read-only fields stated in a manifest are expectations, create-time fields
that differ need a replacement.

The walk is written here rather than delegated to deepdiff: managed-field semantics need a
projection of the live object first, the set-like lists and secret fingerprints sit outside
its model, and on a typical pipe it measured 26 times slower (990 µs against 38 µs per pipe,
which is 10 s against 0.4 s at 10,000 pipes). What each spec path means (secret, resettable,
table mappings, ignored) is worked out once per path and remembered across pipes.

This module imports neither httpx nor click: it turns data into data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.load.schema import reset_defaults
from reconciler.model.fields import (
    EDITABLE_MAPPINGS,
    PIPE_IDENTITY,
    is_create_time_path,
    is_create_time_secret,
    is_secret_path,
    is_table_mappings_path,
    is_validate_only,
    is_writable_pipe_path,
)
from reconciler.model.json import JsonMapping
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.secrets import SecretTree, fingerprint
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    FieldChange,
    SecretCheck,
    diff_keyed_set,
    format_mapping_key,
    is_default,
    mapping_key,
    same,
    secret_field_name,
)

__all__: list[str] = []


def pipe_managed(spec: Mapping[str, SecretTree]) -> dict[str, SecretTree]:
    """Return the managed part of a Pipe spec (its identity removed)."""
    return {k: v for k, v in spec.items() if k not in PIPE_IDENTITY}


def diff_pipe(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    live: JsonMapping,
    secrets: SecretCheck,
) -> list[FieldChange]:
    """Return the field changes that make ``live`` match the pipe ``spec`` (secrets resolved)."""
    defaults = reset_defaults()
    walk = _Walk(resource, secrets, defaults)
    walk.walk(pipe_managed(spec), live, (), _field_tree(defaults))
    return walk.changes


class _Field:
    """What the walk of a pipe needs to know about one spec path, worked out once per path."""

    __slots__ = (
        "children",
        "default",
        "ignored",
        "mappings",
        "path",
        "resettable",
        "secret",
        "sent_once",
    )

    def __init__(self, path: JsonPath, defaults: Mapping[JsonPath, Any]) -> None:
        self.path = path
        self.ignored = is_validate_only(path)
        self.secret = is_secret_path(path)
        self.sent_once = self.secret and is_create_time_secret(path)
        self.resettable = path in defaults
        self.default = defaults.get(path)
        self.mappings = is_table_mappings_path(path)
        self.children: dict[str, _Field] = {}


# The fields met so far, as a tree by key, for the reset defaults they were worked out with.
_fields: tuple[Mapping[JsonPath, Any], dict[str, _Field]] | None = None


def _field_tree(defaults: Mapping[JsonPath, Any]) -> dict[str, _Field]:
    global _fields
    if _fields is None or _fields[0] is not defaults:
        _fields = (defaults, {})
    return _fields[1]


class _Walk:
    """One pipe's walk: the changes found so far, and what finding them needs."""

    __slots__ = ("changes", "defaults", "resource", "secrets")

    def __init__(
        self, resource: Resource, secrets: SecretCheck, defaults: Mapping[JsonPath, Any]
    ) -> None:
        self.resource = resource
        self.secrets = secrets
        self.defaults = defaults
        self.changes: list[FieldChange] = []

    def add(self, path: JsonPath, old: Any, new: Any, kind: ChangeKind) -> None:
        """Record one change, located at its field in the manifest."""
        self.changes.append(FieldChange(path, old, new, kind, self.resource.locate_spec(*path)))

    def walk(
        self, desired: Mapping[str, Any], current: Any, path: JsonPath, fields: dict[str, _Field]
    ) -> None:
        """Compare each field ``desired`` states with ``current`` (the live value at ``path``)."""
        current_map = current if type(current) is dict or isinstance(current, Mapping) else {}
        for key, want in desired.items():
            if type(key) is str:
                field = fields.get(key)
                if field is None:
                    field = fields[key] = _Field((*path, key), self.defaults)
            else:  # not remembered: 1 and True are one dict key but two paths
                field = _Field((*path, key), self.defaults)
            if field.ignored:
                continue
            if field.secret:
                self.secret(field, want)
            else:
                self.value(field, want, current_map.get(key, MISSING))

    def secret(self, field: _Field, want: Any) -> None:
        """Compare a write-only secret through the fingerprint state recorded for it."""
        here = field.path
        recorded = self.secrets.recorded.get(secret_field_name(here))
        key = self.secrets.key
        if want is None and field.resettable:
            # Clearing a write-only secret: done once the state records the null.
            cleared = fingerprint(key, None) if key is not None else None
            if recorded is None or recorded != cleared:
                self.add(here, MISSING, None, ChangeKind.RESET)
        elif field.sent_once:
            # A create-time secret is never read back: compared only to the fingerprint
            # recorded when this tool created the pipe (none for an adopted or pinned one).
            if recorded is not None and key is not None and fingerprint(key, want) != recorded:
                self.add(here, MISSING, want, ChangeKind.REPLACE)
        else:
            now = fingerprint(key, want) if key is not None else None
            if recorded is None or now != recorded:
                self.add(here, MISSING, want, ChangeKind.SENSITIVE)

    def value(self, field: _Field, want: Any, have: Any) -> None:
        """Compare one plain field: reset, table mappings, an object to descend, or a leaf."""
        here = field.path
        if want is None and field.resettable:
            # null resets to the service's default: converged once live is the default.
            if not is_default(field.default, have):
                self.add(here, have, field.default, ChangeKind.RESET)
        elif field.mappings:
            self.changes.extend(_diff_mappings(self.resource, here, want, have))
        elif (type(want) is dict or isinstance(want, Mapping)) and (
            have is MISSING or type(have) is dict or isinstance(have, Mapping)
        ):
            self.walk(want, have, here, field.children)
        elif not same(want, have):
            kind = (
                ChangeKind.SET
                if is_writable_pipe_path(here)
                else ChangeKind.REPLACE
                if is_create_time_path(here)
                else ChangeKind.EXPECTATION
            )
            self.add(here, have, want, kind)


def _diff_mappings(resource: Resource, at: JsonPath, desired: Any, live: Any) -> list[FieldChange]:
    changes = diff_keyed_set(
        resource, at, desired, live, lambda m: format_mapping_key(mapping_key(m))
    )
    if changes and at[1] not in EDITABLE_MAPPINGS:
        # No update edits these mappings (bigquery): another set needs a replacement.
        old = live if isinstance(live, list) else MISSING
        return [FieldChange(at, old, desired, ChangeKind.REPLACE, resource.locate_spec(*at))]
    return changes
