"""Rules of the real service that span several fields, checked before anything is sent.

A JSON Schema judges one document field by field; the service also refuses combinations:
field mappings that leave a destination column unmapped or name a column the table does not
have; Kafka credentials of a shape the authentication method does not take, or a switch of
method without credentials that fit it. Each rule looks at the pipe as it would be after the update (the manifest's value where
it states one, the live value otherwise) and returns messages naming the manifest line, which
the planner turns into errors of the action: a plan error, never a 400 at apply time. Some
source kinds take an update only with members it requires (mysql host and port, …):
``complete_source`` adds them to an update body, and names those nothing can give.

Pure: imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reconciler.model.fields import (
    KAFKA_CREDENTIAL_SHAPES,
    KAFKA_DEFAULT_AUTHENTICATION,
    PATCH_REQUIRES,
    field_mapping_problems,
    is_secret_path,
)
from reconciler.model.json import JsonMapping, as_mapping
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange

__all__: list[str] = []


_MAPPINGS = ("fieldMappings",)
AUTHENTICATION = ("source", "kafka", "authentication")
CREDENTIALS = ("source", "kafka", "credentials")
_COLUMNS = ("destination", "columns")


def _names(items: object, key: str) -> list[str] | None:
    if not isinstance(items, list):
        return None
    return [str(i.get(key)) for i in items if isinstance(i, Mapping)]


@dataclass(frozen=True)
class PipeCheck:
    """What a pipe rule looks at: the manifest's spec (secrets resolved), the live pipe, the diff."""

    resource: Resource
    spec: Mapping[str, SecretTree]
    live: JsonMapping
    changes: Sequence[FieldChange]


def pipe_rule_errors(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    live: JsonMapping,
    changes: Sequence[FieldChange],
) -> list[str]:
    """Return the errors of every pipe rule, in order (each names the manifest place)."""
    check = PipeCheck(resource, spec, live, changes)
    return [*field_mapping_errors(check), *kafka_credential_errors(check)]


def field_mapping_errors(check: PipeCheck) -> list[str]:
    """Check "every destination column mapped once, to existing columns only" when either
    list is about to change."""
    resource, spec, live, changes = check.resource, check.spec, check.live, check.changes
    touched = {c.path for c in changes if c.kind is ChangeKind.SET}
    if _MAPPINGS not in touched and _COLUMNS not in touched:
        return []
    stated_mappings = "fieldMappings" in spec
    destination = spec.get("destination")
    stated_columns = isinstance(destination, Mapping) and "columns" in destination
    mappings = spec["fieldMappings"] if stated_mappings else live.get("fieldMappings")
    columns_value = (
        destination["columns"]
        if stated_columns and isinstance(destination, Mapping)
        else as_mapping(live.get("destination")).get("columns")
    )
    columns = _names(columns_value, "name")
    targets = _names(mappings, "destinationField")
    if columns is None or targets is None:
        return []
    where = resource.locate_spec(*(_MAPPINGS if stated_mappings else _COLUMNS))
    errors: list[str] = []
    for index, problem in field_mapping_problems(columns, targets):
        if index is None:
            errors.append(f"fieldMappings ({where}) {problem}")
            continue
        at = (
            resource.locate_spec("fieldMappings", index, "destinationField")
            if stated_mappings
            else where
        )
        errors.append(f"fieldMappings[{index}] ({at}) {problem}; the service would answer 400")
    return errors


def _shape(keys: frozenset[str]) -> str:
    return "{" + ", ".join(sorted(keys)) + "}"


def kafka_authentication(spec: Mapping[str, SecretTree], live: JsonMapping) -> str:
    """The Kafka authentication method the pipe will have: the manifest's, else the live one."""
    stated = as_mapping(as_mapping(spec.get("source")).get("kafka")).get("authentication", MISSING)
    if isinstance(stated, str):
        return stated
    if stated is None:  # null: back to the service's default
        return KAFKA_DEFAULT_AUTHENTICATION
    current = as_mapping(as_mapping(live.get("source")).get("kafka")).get("authentication")
    return str(current) if current else KAFKA_DEFAULT_AUTHENTICATION


def kafka_credential_errors(check: PipeCheck) -> list[str]:
    """Check that the stated credentials fit the method, and that a switch of method brings
    credentials that fit it."""
    resource, spec, live, changes = check.resource, check.spec, check.live, check.changes
    kafka = as_mapping(spec.get("source")).get("kafka")
    if not isinstance(kafka, Mapping):
        return []
    method = kafka_authentication(spec, live)
    shapes = KAFKA_CREDENTIAL_SHAPES.get(method, ())
    takes = " or ".join(_shape(s) for s in shapes) or "no credentials"
    credentials = kafka.get("credentials")
    if isinstance(credentials, Mapping):
        keys = frozenset(str(k) for k in credentials)
        if keys not in shapes:
            return [
                f"source.kafka.credentials ({resource.locate_spec(*CREDENTIALS)}) are "
                f"{_shape(keys)}, but authentication {method} takes {takes}"
            ]
        return []
    switched = any(c.path == AUTHENTICATION for c in changes)
    if switched and shapes:
        return [
            f"switching source.kafka.authentication to {method} "
            f"({resource.locate_spec(*AUTHENTICATION)}) needs credentials {takes} in the same "
            "manifest: the service takes both in one update"
        ]
    return []


def resend_credentials(
    resource: Resource, spec: Mapping[str, SecretTree], changes: Sequence[FieldChange]
) -> list[FieldChange]:
    """When the method changes, the stated credentials go with it even if their fingerprint is
    unchanged (PLAIN to SCRAM-SHA-512 with the same user): the service wants both at once."""
    credentials = as_mapping(as_mapping(spec.get("source")).get("kafka")).get("credentials")
    switched = any(c.path == AUTHENTICATION for c in changes)
    already = any(c.path == CREDENTIALS for c in changes)
    if not switched or already or not isinstance(credentials, Mapping):
        return []
    where = resource.locate_spec(*CREDENTIALS)
    return [FieldChange(CREDENTIALS, MISSING, credentials, ChangeKind.SENSITIVE, where)]


# What a required member of a source update is when neither the manifest nor the live pipe
# gives it: the only value its enumeration has.
_ONLY_VALUE: dict[tuple[str, str], str] = {("pubsub", "authentication"): "SERVICE_ACCOUNT"}


def complete_source(
    body: Mapping[str, SecretTree], spec: Mapping[str, SecretTree], live: JsonMapping
) -> list[str]:
    """Add to a just-built update body, in place, the members its source kind requires.

    Returns the required members neither the manifest nor the live pipe gives (a secret is
    never read back, so only the manifest gives it).
    """
    source = body.get("source")
    missing: list[str] = []
    if not isinstance(source, dict):
        return missing
    for kind, sub in source.items():
        if not isinstance(sub, dict):
            continue
        stated = as_mapping(as_mapping(spec.get("source")).get(kind))
        current = as_mapping(as_mapping(live.get("source")).get(kind))
        for name in PATCH_REQUIRES.get(kind, ()):
            if name in sub:
                continue
            if name in stated:
                sub[name] = stated[name]
            elif name in current and not is_secret_path(("source", kind, name)):
                sub[name] = current[name]
            elif (kind, name) in _ONLY_VALUE:
                sub[name] = _ONLY_VALUE[(kind, name)]
            else:
                missing.append(f"source.{kind}.{name}")
    return missing
