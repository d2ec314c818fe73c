"""Every change to a stored pipe: create, delete, state commands, scaling, settings and PATCH.

Each function takes the ``Store`` (its data, clock and file) and the service and pipe the
handler looked up, and answers what the real service would: a service that is idle or stopped
refuses every change (424), a Completed pipe refuses updates (400). Pipe PATCH is
merge-patch-like: absent fields stay, nested objects merge, arrays are replaced, a database
pipe's table mappings are removed then added by key; ``null`` does what
``validation.KEEP``/``ABSENT`` say. An update is applied to a copy and committed only when
every check passed, so a 400 never leaves a half-applied change behind; ``updatedAt`` moves
only when the stored record really changed. State commands and the transitional states they
start are ``lifecycle``'s; a pipe's transitional state is settled by every lookup, never by a
timer.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from reconciler.emulator import lifecycle
from reconciler.emulator.create import new_pipe
from reconciler.emulator.databases import DATABASE_KINDS, LABELS, MAPPING_DEFAULTS, MAPPING_KEYS
from reconciler.emulator.pipe_rules import (
    check_field_mappings,
    check_kafka_credentials,
    check_kinesis,
    check_object_storage,
)
from reconciler.emulator.protocol import ApiError, iso_ms, later_than
from reconciler.emulator.store import Store
from reconciler.emulator.validation import merge

__all__: list[str] = []


MappingKey = tuple[str, str, str]


def pipe_kind(pipe: dict[str, Any]) -> str:
    """The pipe's source kind: the one key of its ``source`` object."""
    kind: str = next(iter(pipe["source"]))
    return kind


def _require_awake(service: dict[str, Any]) -> None:
    if service.get("state") in ("idle", "stopped"):
        raise ApiError(
            424, f"Service {service['id']} is {service['state']}; start it to update pipes"
        )


def _require_updatable(service: dict[str, Any], pipe: dict[str, Any]) -> None:
    """A pipe's update needs its service awake and the pipe not Completed."""
    _require_awake(service)
    if pipe["state"] == "Completed":
        raise ApiError(400, f"Pipe {pipe['id']} is Completed and cannot be updated")


def create_pipe(
    store: Store, service: dict[str, Any], body: dict[str, Any], transition_ms: int
) -> dict[str, Any]:
    """Store a pipe from a validated create body: Provisioning, Running once settled."""
    _require_awake(service)
    now = store.clock()
    pipe = new_pipe(body, service["id"], "Provisioning", iso_ms(now))
    route = lifecycle.route(lifecycle.Command.START, pipe_kind(pipe))
    lifecycle.begin(store.data, pipe, route, now + timedelta(milliseconds=transition_ms))
    store.data["pipes"][pipe["id"]] = pipe
    store.save()
    return pipe


def delete_pipe(store: Store, service: dict[str, Any], pipe: dict[str, Any]) -> None:
    """Delete the pipe, whatever its state."""
    _require_awake(service)
    del store.data["pipes"][pipe["id"]]
    lifecycle.forget(store.data, pipe["id"])
    store.save()


def command_pipe(
    store: Store, service: dict[str, Any], pipe: dict[str, Any], command: str, transition_ms: int
) -> dict[str, Any]:
    """Apply a state command (``lifecycle`` says which are no-ops); returns the pipe."""
    _require_awake(service)
    now = store.clock()
    wanted = lifecycle.Command(command)
    if lifecycle.command(store.data, pipe, pipe_kind(pipe), wanted, now, transition_ms):
        pipe["updatedAt"] = later_than(pipe["updatedAt"], now)
        store.save()
    return pipe


def scale_pipe(
    store: Store, service: dict[str, Any], pipe: dict[str, Any], body: dict[str, Any]
) -> dict[str, Any]:
    """Apply a validated scaling body (only the fields given; null = default)."""
    _require_updatable(service, pipe)
    scaling = {**pipe.get("scaling", {}), **body}
    if scaling != pipe.get("scaling"):
        pipe["scaling"] = scaling
        pipe["updatedAt"] = later_than(pipe["updatedAt"], store.clock())
        store.save()
    return pipe


def replace_settings(
    store: Store, service: dict[str, Any], pipe: dict[str, Any], body: dict[str, Any], defaults: Any
) -> dict[str, Any]:
    """Replace the pipe's settings: a field left out (or null) takes its default."""
    _require_updatable(service, pipe)
    settings = {**defaults, **body}
    if settings != pipe["settings"]:
        pipe["settings"] = settings
        pipe["updatedAt"] = later_than(pipe["updatedAt"], store.clock())
        store.save()
    result: dict[str, Any] = pipe["settings"]
    return result


def update_pipe(
    store: Store, service: dict[str, Any], pipe: dict[str, Any], body: dict[str, Any]
) -> dict[str, Any]:
    """Apply a validated PATCH body to the pipe; returns the stored pipe."""
    _require_updatable(service, pipe)
    new = copy.deepcopy(pipe)
    if "name" in body:
        new["name"] = body["name"]
    if "settings" in body:
        new["settings"].update(body["settings"])
    if "fieldMappings" in body:
        new["fieldMappings"] = body["fieldMappings"]
    if "columns" in body.get("destination", {}):
        new["destination"]["columns"] = body["destination"]["columns"]
    if "source" in body:
        _update_source(new, body["source"])
    if "fieldMappings" in body or "columns" in body.get("destination", {}):
        check_field_mappings(new)
    if new != pipe:
        new["updatedAt"] = later_than(pipe["updatedAt"], store.clock())
        store.data["pipes"][pipe["id"]] = new
        store.save()
    return new


def _update_source(pipe: dict[str, Any], source: dict[str, Any]) -> None:
    kind = pipe_kind(pipe)
    for given in source:
        if given != "validateSamples" and given != kind:
            raise ApiError(400, f"source.{given} does not match the pipe's source kind {kind}")
    changes = source.get(kind)
    if not changes:
        return
    stored = pipe["source"][kind]
    if kind not in DATABASE_KINDS:
        before = stored.get("authentication")
        merge(stored, changes)
        if kind == "kafka":
            check_kafka_credentials(
                stored, changes, switched=before != stored.get("authentication")
            )
        elif kind == "objectStorage":
            check_object_storage(stored)
        elif kind == "kinesis":
            check_kinesis(stored, changes)
        return
    adds = changes.get("tableMappingsToAdd", [])
    removes = changes.get("tableMappingsToRemove", [])
    for key, value in changes.items():
        if key == "settings":
            merge(stored["settings"], value)
        elif key not in ("tableMappingsToAdd", "tableMappingsToRemove"):
            merge(stored, {key: value})
    if adds or removes:
        if pipe["state"] != "Paused":
            raise ApiError(400, f"{LABELS[kind]} pipe must be paused to edit")
        stored["tableMappings"] = _edit_mappings(
            kind, stored.get("tableMappings", []), adds, removes
        )


def _mapping_key(kind: str, mapping: dict[str, Any]) -> MappingKey:
    first, second, third = MAPPING_KEYS[kind]
    return (mapping[first], mapping[second], mapping[third])


def _describe(key: MappingKey) -> str:
    return f"{key[0]}.{key[1]} -> {key[2]}"


def _edit_mappings(
    kind: str,
    current: list[dict[str, Any]],
    adds: list[dict[str, Any]],
    removes: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    add_keys = [_mapping_key(kind, m) for m in adds]
    remove_keys = [_mapping_key(kind, m) for m in removes]
    both = set(add_keys) & set(remove_keys)
    if both:
        raise ApiError(
            400, f"table mapping {_describe(min(both))} cannot be added and removed in one request"
        )
    if len(set(add_keys)) != len(add_keys):
        raise ApiError(400, "tableMappingsToAdd lists the same table mapping twice")
    present = {_mapping_key(kind, m) for m in current}
    for i, key in enumerate(remove_keys):
        if key not in present:
            raise ApiError(
                400, f"tableMappingsToRemove.{i}: table mapping {_describe(key)} does not exist"
            )
    kept = [m for m in current if _mapping_key(kind, m) not in set(remove_keys)]
    kept_keys = {_mapping_key(kind, m) for m in kept}
    for i, (key, mapping) in enumerate(zip(add_keys, adds, strict=True)):
        if key in kept_keys:
            raise ApiError(
                400, f"tableMappingsToAdd.{i}: table mapping {_describe(key)} already exists"
            )
        # The real service fills the optional fields; echo them so that GET shows a full mapping.
        kept.append({**MAPPING_DEFAULTS[kind], **mapping})
    return kept
