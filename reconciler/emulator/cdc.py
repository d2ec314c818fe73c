"""A service's CDC scaling: the compute shared by its database pipes.

It exists once the service has at least one database pipe (``DATABASE_KINDS``); before that
both reading and changing it answer 400. Its replicas get one CPU core per 4 GB of memory, so
the two fields move together: a PATCH may give either (the other follows) or both when they
agree; disagreeing values are a 400. Values are kept per service in the store's
``cdcScaling`` table, starting at 2 cores and 8 GB.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.lifecycle import DATABASE_KINDS
from reconciler.emulator.protocol import ApiError
from reconciler.emulator.validation import integer, management, number, obj

__all__: list[str] = []


PATCH = obj(
    {
        "replicaCpuMillicores": integer(1000, 32000, 1000),
        "replicaMemoryGb": number(4, 128, 4),
    }
)
DEFAULT = {"replicaCpuMillicores": 2000, "replicaMemoryGb": 8}
GB_PER_CORE = 4


def require_database_pipe(service: dict[str, Any], pipes: list[dict[str, Any]]) -> None:
    """A 400 unless one of the service's pipes reads a database."""
    if not any(next(iter(p["source"])) in DATABASE_KINDS for p in pipes):
        raise ApiError(
            400,
            f"Service {service['id']} has no database pipe: CDC scaling applies once it has one "
            f"({', '.join(DATABASE_KINDS)})",
        )


def current(data: dict[str, Any], service_id: str) -> dict[str, Any]:
    """The service's CDC scaling (the default until changed)."""
    stored: dict[str, Any] = data.get("cdcScaling", {}).get(service_id, DEFAULT)
    return dict(stored)


def validate(body: Any) -> dict[str, Any]:
    """The full scaling a PATCH body asks for (one field implies the other), or a 400."""
    result = management(PATCH, body)
    cpu, memory = result.get("replicaCpuMillicores"), result.get("replicaMemoryGb")
    if cpu is not None and memory is not None and memory != cpu // 1000 * GB_PER_CORE:
        raise ApiError(
            400,
            f"replicaMemoryGb must be {GB_PER_CORE} GB per core: "
            f"{cpu // 1000 * GB_PER_CORE} for replicaCpuMillicores {cpu}, not {memory}",
        )
    if cpu is not None:
        return {"replicaCpuMillicores": cpu, "replicaMemoryGb": cpu // 1000 * GB_PER_CORE}
    if memory is not None:
        cores = int(memory) // GB_PER_CORE
        return {"replicaCpuMillicores": cores * 1000, "replicaMemoryGb": cores * GB_PER_CORE}
    return {}


def change(data: dict[str, Any], service_id: str, wanted: dict[str, Any]) -> dict[str, Any]:
    """Store the wanted scaling (nothing when the body gave none); returns the scaling."""
    if wanted:
        data.setdefault("cdcScaling", {})[service_id] = wanted
    return current(data, service_id)
