"""Planning a pipe's life beyond updates: create, replace, prune.

A manifest bound to no live pipe (``identity.Bound.NEW``) becomes a create: one POST of the
whole pipe (its create-time fields included, and every stated ``null`` the create body takes),
shown field by field with secrets as ``(sensitive value)``. A create-time field that differs on
a live pipe can only change through a replacement: with ``--replace`` (never for a pinned
``pipeId``) a DELETE of the old pipe then the same POST. Prune deletes a pipe this tool created
whose manifest is gone. A create lacking a field the pipe cannot be created without is an
error of its action (``createchecks.create_errors``), with nothing sent.

Requests that ``run`` state or scaling adds to a create go after the POST with ``CREATED_ID``
in their path. This module imports neither httpx nor click.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.client.paths import pipe_path, pipes_path
from reconciler.load.schema import reset_defaults
from reconciler.model.errors import Location
from reconciler.model.fields import create_omits_null, is_secret_path
from reconciler.model.identity import Bound, Record
from reconciler.model.json import JsonMapping, as_mapping
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.secrets import SecretTree, fingerprint, redact
from reconciler.plan.actions import Action, Op, Purpose, Request, prune_action, replacing
from reconciler.plan.createchecks import create_errors, mapping_note
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    FieldChange,
    SecretCheck,
    content_hash,
    present,
    same,
    secret_field_name,
)

__all__ = ["sent_hash", "shows_body"]


# The top-level fields of a pipe's create body (``state`` goes through the state command).
CREATE_FIELDS: tuple[str, ...] = (
    "name",
    "source",
    "destination",
    "fieldMappings",
    "settings",
    "scaling",
)

# What a replacement loses, per source kind (said in the plan).
_LOST = {
    "kafka": "its consumer group offsets restart as `offset` says",
    "objectStorage": "the record of files already loaded (the initial load runs again)",
    "kinesis": "its position in the stream restarts as `iteratorType` says",
    "pubsub": "its subscription's position (reading restarts as `seekType` says)",
    "postgres": "its replication slot (a new initial snapshot is taken)",
    "mysql": "its replication position (a new initial snapshot is taken)",
    "mongodb": "its change stream position (a new initial snapshot is taken)",
    "bigquery": "its snapshot progress (the tables are copied again)",
}


def create_body(spec: Mapping[str, SecretTree]) -> dict[str, SecretTree]:
    """Return the POST body of a pipe ``spec`` (secrets resolved): every stated field.

    A stated ``null`` is sent as null (the service's default, stated), so that the created pipe
    equals the manifest at once; where the create body takes no null it is left out instead
    (``fields.create_omits_null``), which gives the same default.
    """
    return {
        k: v
        for k in CREATE_FIELDS
        if k in spec
        for v in [_stated(spec[k], (k,))]
        if v != {} and v is not None
    }


def sent_hash(body: Mapping[str, SecretTree]) -> str:
    """Return the fingerprint of a create body (its secrets left out) that state keeps while
    the create's answer is pending: the proof, if it is lost, that a pipe is the one it made."""
    return content_hash(_public(body, ()))


def made_by_lost_create(
    spec: Mapping[str, SecretTree], record: Record | None, live: JsonMapping
) -> bool:
    """Tell whether an adopted live pipe is the one a create of this tool made whose answer was
    lost: ``record`` is that create's pending mark, the manifest's create body is the exact one
    it sent, and the live pipe shows every field of it (secrets aside: never returned)."""
    if record is None or not (record.uncertain and record.created_by_us) or not record.content_hash:
        return False
    body = create_body(spec)
    return sent_hash(body) == record.content_hash and shows_body(body, live)


def shows_body(body: Mapping[str, SecretTree], live: JsonMapping) -> bool:
    """Tell whether a live pipe shows every field of a create body (secrets aside)."""
    return same(_public(body, ()), live)


def _public(value: Any, path: JsonPath) -> Any:
    """Return a create body without its secret subtrees and its nulls (a null asks for the
    service's default, which a live pipe may show as a value or leave out)."""
    if not isinstance(value, Mapping):
        return value
    return {
        k: _public(v, (*path, k))
        for k, v in value.items()
        if v is not None and not is_secret_path((*path, k))
    }


def _stated(value: Any, path: JsonPath) -> Any:
    if isinstance(value, Mapping):
        return {
            k: _stated(v, (*path, k))
            for k, v in value.items()
            if v is not None or not create_omits_null((*path, k))
        }
    return value


def create_changes(resource: Resource, body: Mapping[str, SecretTree]) -> list[FieldChange]:
    """Return one change per field the create sends (a secret subtree as one sensitive change;
    a null as a reset to the service's default, which is what the created pipe then shows)."""
    out: list[FieldChange] = []
    defaults = reset_defaults()

    def walk(value: Any, path: JsonPath) -> None:
        if path and is_secret_path(path):
            out.append(
                FieldChange(path, MISSING, value, ChangeKind.SENSITIVE, resource.locate_spec(*path))
            )
        elif isinstance(value, Mapping) and value:
            for key, sub in value.items():
                walk(sub, (*path, key))
        elif value is None and path in defaults:
            out.append(
                FieldChange(
                    path, MISSING, defaults[path], ChangeKind.RESET, resource.locate_spec(*path)
                )
            )
        else:
            out.append(
                FieldChange(path, MISSING, value, ChangeKind.SET, resource.locate_spec(*path))
            )

    walk(body, ())
    return out


def _secrets_sent(changes: Sequence[FieldChange], secrets: SecretCheck) -> dict[str, str]:
    if secrets.key is None:
        return {}
    return {
        secret_field_name(c.path): fingerprint(secrets.key, c.new)
        for c in changes
        if c.kind is ChangeKind.SENSITIVE and present(c.new)
    }


def plan_create(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    secrets: SecretCheck,
    *,
    target: Mapping[str, str],
    warnings: Sequence[str] = (),
    record: Record | None = None,
) -> Action:
    """Plan the creation of a pipe bound to no live pipe (``target``: organization, service)."""
    where = resource.locate("metadata", "name")
    errors = create_errors(resource, spec)
    body = create_body(spec)
    changes = create_changes(resource, body)
    path = pipes_path(target["organizationId"], target["serviceId"])
    post = Request("POST", path, body, idempotent=False, purpose=Purpose.CREATE)
    named = body.get("name")  # a string: the schema says so (None: a manifest without one)
    basis = {
        "id": None,
        "name": named if isinstance(named, str) else None,
        "serviceId": target["serviceId"],
    }
    gone = (
        (f"pipe {record.id} recorded in state no longer exists on the server; creating it again",)
        if record is not None and record.id
        else ()
    )
    return Action(
        "Pipe",
        resource.name,
        Op.ERROR if errors else Op.CREATE,
        where,
        changes=tuple(changes),
        requests=() if errors else (post,),
        errors=tuple(errors),
        warnings=(*gone, *warnings, *mapping_note(spec)),
        target=dict(target),
        basis=basis,
        basis_hash=content_hash(basis),
        secrets=_secrets_sent(changes, secrets),
        bound=Bound.NEW,
    )


def plan_replace(
    created: Action, live: JsonMapping, reasons: Sequence[FieldChange], bound: str | None
) -> Action:
    """Make ``created`` (the manifest's pipe planned as new, ``target`` naming the live one)
    the replacement of ``live``: DELETE it, then create it from the manifest."""
    if created.errors:
        return created
    target = created.target
    old = target["pipeId"]
    delete = Request(
        "DELETE",
        pipe_path(target["organizationId"], target["serviceId"], old),
        None,
        purpose=Purpose.DELETE_FOR_REPLACE,
    )
    # What is lost is the live pipe's progress, whatever source the manifest now gives.
    kinds = [k for k in as_mapping(live.get("source")) if k in _LOST]
    lost = "; ".join(_LOST[k] for k in kinds) or "its progress"
    warning = (
        f"replaces pipe {old}: it is deleted and created again with a new id, so ingestion "
        f"stops and restarts; lost: {lost}, its run history and metrics. The destination "
        "table and its rows are kept."
    )
    basis = {"id": old, "name": live.get("name"), "serviceId": target["serviceId"]}
    return replacing(created, reasons, delete, warning, basis=basis, bound=bound)


def replacement_errors(
    reasons: Sequence[FieldChange], *, pinned: Location | None, replace: bool
) -> list[str]:
    """Say why a pipe whose create-time fields differ is not replaced (none: it may be)."""
    if not reasons:
        return []
    what = "; ".join(
        f"{c.dotted}: (sensitive value changed)"
        if is_secret_path(c.path)
        else f"{c.dotted}: {_plain(c.old)} → {_plain(c.new)}"
        for c in reasons
    )
    head = f"must be replaced ({what}): create-time field(s) differ"
    if pinned is not None:
        return [
            f"{head}, but the pipe is pinned by spec.pipeId ({pinned}) and a pinned pipe is "
            "never replaced: change it on the server, or remove spec.pipeId and apply with "
            "--replace"
        ]
    if not replace:
        return [
            f"{head} ({reasons[0].location}); pass --replace to delete the pipe and create it "
            "again (ingestion restarts)"
        ]
    return []


def plan_prune(name: str, record: Record, live: JsonMapping | None, location: Location) -> Action:
    """Plan the deletion of a pipe this tool created whose manifest is gone."""
    scope = record.scope or {}
    ident = record.id or ""
    target = {
        "organizationId": scope.get("organizationId", ""),
        "serviceId": scope.get("serviceId", ""),
        "pipeId": ident,
    }
    request = Request(
        "DELETE",
        pipe_path(target["organizationId"], target["serviceId"], ident),
        None,
        purpose=Purpose.DELETE,
    )
    shown = f"{ident} ({live.get('name')})" if live else ident
    basis = {"id": ident, "name": live.get("name") if live else record.display_name}
    return prune_action(
        "Pipe",
        name,
        location,
        removed=("pipe", shown),
        delete=request,
        warning="manifest removed: deletes the pipe this tool created (ingestion stops)",
        target=target,
        basis=basis,
    )


def _plain(value: Any) -> str:
    if value is MISSING:
        return "absent"
    if isinstance(value, str):
        return value
    return json.dumps(redact(value), separators=(", ", ": "))
