"""Inputs of the pure planning functions: a pipe resource with located lines, live pipes, secrets.

``plan_for(spec, live)`` plans one pipe (ids ``IDS``, path ``PIPE_PATH``) against a live body
such as ``KAFKA_LIVE`` or ``pg_live(...)``; ``LineLocator`` answers a distinct manifest line per
path so that tests can check where an error points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.client.live import Observed
from reconciler.model.errors import Location
from reconciler.model.resources import PathPart, Resource
from reconciler.plan.actions import Action
from reconciler.plan.diff import SecretCheck
from reconciler.plan.planners import plan_pipe

KEY = b"k" * 32


NO_SECRETS = SecretCheck(KEY, {})


IDS = {"organizationId": "org-1", "serviceId": "svc-1", "pipeId": "pipe-1"}


PIPE_PATH = "/v1/organizations/org-1/services/svc-1/pipes/pipe-1"


class LineLocator:
    """Answers line N for a path registered as N, else the nearest registered parent."""

    def __init__(self, lines: Mapping[tuple[PathPart, ...], int], column: int = 1) -> None:
        self.lines = dict(lines)
        self.column = column

    def locate(self, path: Sequence[PathPart]) -> Location:
        parts = tuple(path)
        while parts and parts not in self.lines:
            parts = parts[:-1]
        return Location("m.yaml", self.lines.get(parts, 1), self.column)


def pipe_resource(spec: Mapping[str, Any]) -> Resource:
    return Resource("Pipe", "orders", {**IDS, **spec}, "m.yaml", locator=LOCATOR)


def plan_for(
    spec: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    secrets: SecretCheck = NO_SECRETS,
    endpoints: Mapping[str, str | None] | None = None,
    error: str | None = None,
) -> Action:
    resource = pipe_resource(spec)
    observed = Observed(
        live=live, error=error, path=PIPE_PATH, endpoint_status=dict(endpoints or {})
    )
    return plan_pipe(resource, resource.spec, observed, secrets, ids=IDS)


KAFKA_LIVE: dict[str, Any] = {
    "id": "pipe-1",
    "name": "orders",
    "state": "Running",
    "source": {
        "kafka": {
            "brokers": "b-1:9092",
            "topics": "orders",
            "reversePrivateEndpointIds": ["e1"],
            "iamRole": "arn:old",
        }
    },
    "destination": {"database": "default", "table": "orders", "columns": [{"name": "id"}]},
    "fieldMappings": [{"sourceField": "id", "destinationField": "id"}],
    "settings": {"streaming_max_insert_wait_ms": 5000, "engine_max_threads": 4},
}


def tm(table: str, target: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "sourceSchemaName": "public",
        "sourceTable": table,
        "targetTable": target or table,
        **extra,
    }


def pg_live(mappings: list[dict[str, Any]], state: str = "Paused") -> dict[str, Any]:
    return {
        "name": "cdc",
        "state": state,
        "source": {
            "postgres": {
                "host": "db",
                "port": 5432,
                "settings": {"syncIntervalSeconds": 10},
                "tableMappings": mappings,
            }
        },
        "settings": {"engine_max_threads": 4},
    }


def pg_spec(mappings: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"source": {"postgres": {"tableMappings": mappings}}, **extra}


ORG_PATH = "/v1/organizations/org-1"


LOCATOR = LineLocator({("metadata", "name"): 4, ("spec",): 6})
