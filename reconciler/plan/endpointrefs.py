"""Pipes that name reverse private endpoints by manifest name, resolved to ids at plan time.

``source.kafka.reversePrivateEndpoints: [msk-orders]`` names ``ReversePrivateEndpoint``
manifests; the plan turns each into the id its endpoint is bound to and merges them into
``reversePrivateEndpointIds`` (after the ids stated there), so the pipe is planned exactly as
if the ids had been written. An endpoint the same plan creates has no id yet: it stands as
``known_after_create`` until apply, which makes the endpoint first, waits for it to be Ready,
and puts its id in the pipe's requests (``fill_created``). With environments, one base
manifest names the endpoint and each environment binds its own.

This module imports neither httpx nor click.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.model.endpoints import ENDPOINT
from reconciler.model.errors import suggest
from reconciler.model.json import as_items, as_mapping
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, error_action

__all__ = ["fill_created"]


NAMES = "reversePrivateEndpoints"
IDS = "reversePrivateEndpointIds"
_PENDING = "(known after create: "


def known_after_create(key: str) -> str:
    """Return what stands for the id of the endpoint ``key`` until apply creates it."""
    return f"{_PENDING}{key})"


def pending_key(value: object) -> str | None:
    """Return the endpoint key a ``known_after_create`` value stands for (None: not one)."""
    if isinstance(value, str) and value.startswith(_PENDING) and value.endswith(")"):
        return value[len(_PENDING) : -1]
    return None


def named_endpoints(pipe: Resource) -> list[str]:
    """Return the endpoint manifest names a pipe's Kafka source lists."""
    kafka = as_mapping(as_mapping(pipe.spec.get("source")).get("kafka"))
    return [str(n) for n in as_items(kafka.get(NAMES))]


def refer(
    pipes: Sequence[Resource], endpoints: Mapping[str, Action]
) -> tuple[list[Resource], dict[str, Action]]:
    """Return the pipes (in order) with endpoint names resolved, and an error action for each
    pipe whose names cannot be (``endpoints``: the planned endpoint actions by
    ``metadata.name``); such a pipe is returned as it was, to keep its place in the plan."""
    out: list[Resource] = []
    failed: dict[str, Action] = {}
    for pipe in pipes:
        names = named_endpoints(pipe) if pipe.kind == "Pipe" else []
        if not names:
            out.append(pipe)
            continue
        ids: list[str] = []
        problems: list[str] = []
        for name in names:
            action = endpoints.get(name)
            if action is None:
                problems.append(
                    f"no {ENDPOINT} manifest is named {name!r}{suggest(name, endpoints)}"
                )
            elif action.errors:
                problems.append(f"{ENDPOINT}/{name} cannot be planned: {action.errors[0]}")
            elif action.operation in (Op.CREATE, Op.REPLACE):
                ids.append(known_after_create(action.key))
            else:
                ids.append(str(action.target.get("reversePrivateEndpointId")))
        if problems:
            where = pipe.locate_spec("source", "kafka", NAMES)
            failed[pipe.key] = error_action(
                "Pipe",
                pipe.name,
                pipe.locate("metadata", "name"),
                f"{where}: {'; '.join(problems)}",
            )
            out.append(pipe)
            continue
        out.append(dataclasses.replace(pipe, spec=_with_ids(pipe.spec, ids)))
    return out, failed


def _with_ids(spec: Mapping[str, Any], ids: list[str]) -> dict[str, Any]:
    source = dict(as_mapping(spec.get("source")))
    kafka = dict(as_mapping(source.get("kafka")))
    kafka.pop(NAMES, None)
    merged = [str(i) for i in as_items(kafka.get(IDS))]
    kafka[IDS] = merged + [i for i in ids if i not in merged]
    source["kafka"] = kafka
    return {**spec, "source": source}


def fill_created(action: Action, created: Mapping[str, str]) -> Action | str:
    """Put the ids of endpoints created in this apply into a pipe's requests and changes;
    return what is missing when one was not created."""
    missing: set[str] = set()

    def fill(value: Any) -> Any:
        key = pending_key(value)
        if key is not None:
            if key not in created:
                missing.add(key)
                return value
            return created[key]
        if isinstance(value, Mapping):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [fill(v) for v in value]
        return value

    requests = tuple(
        dataclasses.replace(r, body=fill(r.body)) if r.body is not None else r
        for r in action.requests
    )
    changes = tuple(
        dataclasses.replace(c, old=fill(c.old), new=fill(c.new)) for c in action.changes
    )
    if missing:
        return (
            f"not sent: {', '.join(sorted(missing))}, which this pipe names, was not created "
            "and Ready in this apply; run apply again"
        )
    return dataclasses.replace(action, requests=requests, changes=changes)


def endpoint_users(resources: Sequence[Resource]) -> dict[str, frozenset[str]]:
    """Map each pipe manifest to the endpoints its Kafka source names (ids and manifest names)."""
    out: dict[str, frozenset[str]] = {}
    for resource in resources:
        if resource.kind != "Pipe":
            continue
        kafka = as_mapping(as_mapping(resource.spec.get("source")).get("kafka"))
        named = [*as_items(kafka.get(IDS)), *as_items(kafka.get(NAMES))]
        if named:
            out[resource.key] = frozenset(str(n) for n in named)
    return out
