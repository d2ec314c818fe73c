"""A service's CDC scaling as manifests describe it: the compute its database pipes share.

One CPU core goes with 4 GB of memory: a manifest that states both must state them in that
ratio (``ratio_error``), checked before anything is sent. The scaling exists once the service
has a database pipe (``DATABASE_SOURCES``).
"""

from __future__ import annotations

from reconciler.model.json import JsonMapping

__all__ = ["CDC", "DATABASE_SOURCES", "FIELDS", "ratio_error"]


CDC = "CdcScaling"
FIELDS: tuple[str, ...] = ("replicaCpuMillicores", "replicaMemoryGb")
GB_PER_CORE = 4
# The source kinds whose pipes make a service have CDC scaling.
DATABASE_SOURCES = frozenset({"postgres", "mysql", "mongodb", "bigquery"})


def ratio_error(spec: JsonMapping) -> str | None:
    """Say why stated CPU and memory disagree (None: they agree, or one is not stated)."""
    cpu, memory = spec.get("replicaCpuMillicores"), spec.get("replicaMemoryGb")
    if not isinstance(cpu, int) or not isinstance(memory, int | float):
        return None
    wanted = cpu // 1000 * GB_PER_CORE
    if memory == wanted:
        return None
    return (
        f"replicaMemoryGb must be {GB_PER_CORE} GB per core: {wanted} for replicaCpuMillicores "
        f"{cpu}, not {memory:g}"
    )
