"""Tables and documents for the read-only commands: rows, detail lists, JSON/YAML dumps.

Pure functions from live objects (already fetched and redacted by ``reconciler.inventory.reads``) to
strings and rows for ``render.table``; the commands only echo what these return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta

from reconciler.inventory.reads import (
    BackupFreshness,
    backup_time,
    human_duration,
    human_size,
    source_kind,
    utc_iso,
)
from reconciler.model.fields import DATABASE_KINDS
from reconciler.model.json import JsonLike, JsonMapping, as_items, as_mapping

__all__ = [
    "BACKUP_HEADERS",
    "DASHBOARD_HEADERS",
    "FRESHNESS_HEADERS",
    "SERVICE_HEADERS",
    "backup_rows",
    "cdc_scaling_details",
    "dashboard_rows",
    "details_text",
    "dump",
    "freshness_rows",
    "offender_line",
    "organization_details",
    "service_rows",
]


_USERINFO = re.compile(r"//[^/@]*@")
# Per source kind, a few words on where a pipe reads from (given the kind's own body).
_SOURCE_SUMMARIES: dict[str, Callable[[JsonMapping], str]] = {
    "kafka": lambda b: f"kafka {b.get('topics', '?')} @ {b.get('brokers', '?')}",
    "objectStorage": lambda b: f"objectStorage {b.get('url') or b.get('path') or '?'}",
    "kinesis": lambda b: f"kinesis {b.get('streamName', '?')} ({b.get('region', '?')})",
    "postgres": lambda b: (
        f"postgres {b.get('host', '?')}:{b.get('port', '?')}/{b.get('database', '?')} "
        f"({len(as_items(b.get('tableMappings')))} tables)"
    ),
    "pubsub": lambda b: f"pubsub {b.get('topic', '?')} ({b.get('projectId', '?')})",
    "mysql": lambda b: (
        f"mysql {b.get('host', '?')}:{b.get('port', '?')} "
        f"({len(as_items(b.get('tableMappings')))} tables)"
    ),
    # A URI may carry a user and password before its host: they are never shown.
    "mongodb": lambda b: (
        f"mongodb {_USERINFO.sub('//', str(b.get('uri', '?')))} "
        f"({len(as_items(b.get('tableMappings')))} collections)"
    ),
    "bigquery": lambda b: (
        f"bigquery {b.get('snapshotStagingPath', '?')} "
        f"({len(as_items(b.get('tableMappings')))} tables)"
    ),
}


def source_summary(pipe: JsonMapping) -> str:
    """Describe where a pipe reads from in a few words."""
    kind = source_kind(pipe)
    summary = _SOURCE_SUMMARIES.get(kind)
    return summary(as_mapping(as_mapping(pipe.get("source")).get(kind))) if summary else "?"


def destination_summary(pipe: JsonMapping) -> str:
    """Return ``database.table`` of a pipe's destination."""
    dest = as_mapping(pipe.get("destination"))
    if "table" not in dest and source_kind(pipe) in DATABASE_KINDS:
        # A database pipe writes one table per mapping into its database.
        return f"{dest.get('database', '?')}.*"
    return f"{dest.get('database', '?')}.{dest.get('table', '?')}"


def scaling_summary(pipe: JsonMapping) -> str:
    """Describe a pipe's scaling: ``2 × (500m CPU, 2 GiB)``, concurrency too."""
    s = as_mapping(pipe.get("scaling"))
    if not s:
        return "-"
    memory = human_size(float(str(s.get("replicaMemoryGb", 0))) * 1024**3)
    return (
        f"{s.get('replicas', '?')} × ({s.get('replicaCpuMillicores', '?')}m CPU, {memory}), "
        f"concurrency {_concurrency(s.get('concurrency'))}"
    )


def _concurrency(value: JsonLike) -> str:
    # 0 is how the service says "auto-scaled".
    return "auto" if value == 0 and not isinstance(value, bool) else str(value or "?")


def source_access(pipe: JsonMapping) -> str:
    """Describe how a pipe's source is read: ``JSONEachRow, authentication PLAIN``."""
    body = as_mapping(as_mapping(pipe.get("source")).get(source_kind(pipe)))
    parts = [str(body["format"])] if body.get("format") else []
    if body.get("authentication"):
        parts.append(f"authentication {body['authentication']}")
    return ", ".join(parts) or "-"


def placement(item: JsonMapping, provider_key: str = "provider") -> str:
    """Return ``provider/region`` of a service or endpoint (``-`` for what is not shown)."""
    provider, region = item.get(provider_key), item.get("region")
    if not provider and not region:
        return "-"
    return f"{provider or '?'}/{region or '?'}"


def tags_text(service: JsonMapping) -> str:
    """Render service tags as ``Key=Value,Key``."""
    tags = as_items(service.get("tags"))
    return (
        ",".join(
            f"{t.get('key')}={t['value']}" if t.get("value") is not None else str(t.get("key"))
            for t in tags
            if isinstance(t, Mapping)
        )
        or "-"
    )


def offender_line(item: BackupFreshness) -> str:
    """Describe one stale service for people: last good backup, its age, last error."""
    if item.last_good is None:
        text = f"{item.service}: no successful backup"
    else:
        text = f"{item.service}: last good backup {utc_iso(item.last_good)} ({human_duration(_secs(item.age))} ago)"
    if item.last_error:
        text += f"; last error {describe_backup(item.last_error)}"
    return text


def describe_backup(backup: JsonMapping) -> str:
    """Name a backup by its time and name: ``2026-11-21T19:17:34Z (backup-20261121-1910)``."""
    return f"{utc_iso(backup_time(backup))} ({backup.get('backupName') or backup.get('id')})"


def _secs(delta: timedelta | None) -> float | None:
    return delta.total_seconds() if delta is not None else None


# -- views: rows for ``render.table`` ---------------------------------------------------------

# A column: its header and how it shows one object. Each table is one list of columns, so a
# header and its value never drift apart.
Column = tuple[str, Callable[[JsonMapping], str]]


def _field(name: str, missing: str | None = None) -> Callable[[JsonMapping], str]:
    """Show one field of an object (``missing`` when it is absent)."""
    return lambda item: str(item.get(name, missing))


def _set(name: str) -> Callable[[JsonMapping], str]:
    """Show one field of an object, ``-`` when it is absent or empty."""
    return lambda item: str(item.get(name) or "-")


def _time(name: str) -> Callable[[JsonMapping], str]:
    """Show a timestamp field in UTC ISO form."""
    return lambda item: utc_iso(item.get(name))


SERVICE_COLUMNS: tuple[Column, ...] = (
    ("NAME", _field("name")),
    ("ID", _field("id")),
    ("STATE", _field("state", "-")),
    ("TAGS", tags_text),
    ("VERSION", _field("engineVersion", "-")),
    ("REPLICAS", _field("numReplicas", "-")),
    ("MEMORY", lambda s: f"{s.get('minTotalMemoryGb', '?')}-{s.get('maxTotalMemoryGb', '?')} GB"),
    ("REGION", placement),
    ("TIER", _set("tier")),
    ("CREATED", _time("createdAt")),
)
BACKUP_COLUMNS: tuple[Column, ...] = (
    ("STARTED", _time("startedAt")),
    ("STATUS", _field("status", "-")),
    ("TYPE", _set("type")),
    ("SIZE", lambda b: human_size(b.get("sizeInBytes"))),
    ("DURATION", lambda b: human_duration(b.get("durationInSeconds"))),
    ("NAME", _field("backupName", "-")),
    ("ID", _field("id")),
)
PIPE_COLUMNS: tuple[Column, ...] = (
    ("NAME", _field("name")),
    ("ID", _field("id")),
    ("STATE", _field("state", "-")),
    ("SOURCE", source_summary),
    ("DESTINATION", destination_summary),
    ("UPDATED", _time("updatedAt")),
)
DASHBOARD_COLUMNS: tuple[Column, ...] = (
    ("NAME", _field("name")),
    ("ID", _field("id")),
    ("TILES", lambda d: str(len(as_items(d.get("tiles"))))),
    ("TAGS", lambda d: ",".join(str(t) for t in as_items(d.get("tags"))) or "-"),
)
ENDPOINT_COLUMNS: tuple[Column, ...] = (
    ("DESCRIPTION", _field("description", "-")),
    ("ID", _field("id")),
    ("TYPE", _field("type", "-")),
    ("STATUS", _field("status", "-")),
    ("ENDPOINT ID", _field("endpointId", "-")),
)
SERVICE_HEADERS = tuple(header for header, _ in SERVICE_COLUMNS)
ENDPOINT_HEADERS = tuple(header for header, _ in ENDPOINT_COLUMNS)
BACKUP_HEADERS = tuple(header for header, _ in BACKUP_COLUMNS)
PIPE_HEADERS = tuple(header for header, _ in PIPE_COLUMNS)
DASHBOARD_HEADERS = tuple(header for header, _ in DASHBOARD_COLUMNS)
FRESHNESS_HEADERS = ("SERVICE", "STATUS", "LAST GOOD BACKUP", "AGE", "LAST ERROR")


def rows(items: Sequence[JsonMapping], columns: Sequence[Column]) -> list[list[str]]:
    """Return one row per object, one cell per column."""
    return [[show(item) for _, show in columns] for item in items]


def service_rows(services: Sequence[JsonMapping]) -> list[list[str]]:
    """Return one row per service."""
    return rows(services, SERVICE_COLUMNS)


def backup_rows(backups: Sequence[JsonMapping]) -> list[list[str]]:
    """Return one row per backup."""
    return rows(backups, BACKUP_COLUMNS)


def pipe_rows(pipes: Sequence[JsonMapping]) -> list[list[str]]:
    """Return one row per pipe."""
    return rows(pipes, PIPE_COLUMNS)


def endpoint_rows(endpoints: Sequence[JsonMapping]) -> list[list[str]]:
    """Return one row per reverse private endpoint."""
    return rows(endpoints, ENDPOINT_COLUMNS)


def cdc_scaling_details(scaling: JsonMapping) -> list[tuple[str, str]]:
    """Return (label, value) pairs describing a service's CDC capacity."""
    return [
        ("CPU (millicores)", str(scaling.get("replicaCpuMillicores", "-"))),
        ("Memory (GB)", str(scaling.get("replicaMemoryGb", "-"))),
    ]


def dashboard_rows(dashboards: Sequence[JsonMapping]) -> list[list[str]]:
    """Return one row per dashboard."""
    return rows(dashboards, DASHBOARD_COLUMNS)


def freshness_rows(items: Sequence[BackupFreshness]) -> list[list[str]]:
    """Return one row per checked service."""
    return [
        [
            i.service,
            "OK" if i.ok else "STALE",
            utc_iso(i.last_good) if i.last_good else "none",
            human_duration(_secs(i.age)),
            describe_backup(i.last_error) if i.last_error else "-",
        ]
        for i in items
    ]


def pipe_details(pipe: JsonMapping) -> list[tuple[str, str]]:
    """Return (label, value) pairs describing one pipe."""
    mappings = as_items(pipe.get("fieldMappings"))
    return [
        ("Name", str(pipe.get("name"))),
        ("ID", str(pipe.get("id"))),
        ("Service", str(pipe.get("serviceId"))),
        ("State", str(pipe.get("state", "-"))),
        ("Source", source_summary(pipe)),
        ("Access", source_access(pipe)),
        ("Destination", destination_summary(pipe)),
        ("Columns", str(len(as_items(as_mapping(pipe.get("destination")).get("columns"))))),
        ("Field mappings", str(len(mappings))),
        ("Scaling", scaling_summary(pipe)),
        ("Created", utc_iso(pipe.get("createdAt"))),
        ("Updated", utc_iso(pipe.get("updatedAt"))),
    ]


def endpoint_details(endpoint: JsonMapping) -> list[tuple[str, str]]:
    """Return (label, value) pairs describing one reverse private endpoint."""
    return [
        ("ID", str(endpoint.get("id"))),
        ("Service", str(endpoint.get("serviceId"))),
        ("Description", str(endpoint.get("description") or "-")),
        ("Type", str(endpoint.get("type") or "-")),
        ("Status", str(endpoint.get("status") or "-")),
        ("Endpoint ID", str(endpoint.get("endpointId") or "-")),
        ("Service name", str(endpoint.get("vpcEndpointServiceName") or "-")),
        ("Cluster authentication", str(endpoint.get("mskAuthentication") or "-")),
        ("DNS names", ", ".join(map(str, as_items(endpoint.get("dnsNames")))) or "-"),
        (
            "Private DNS names",
            ", ".join(map(str, as_items(endpoint.get("privateDnsNames")))) or "-",
        ),
    ]


def organization_details(org: JsonMapping) -> list[tuple[str, str]]:
    """Return (label, value) pairs describing the organization."""
    endpoints = [
        f"{e.get('id')} ({e.get('description') or '-'})"
        + (f" {placement(e, 'cloudProvider')}" if e.get("region") or e.get("cloudProvider") else "")
        for e in as_items(org.get("privateEndpoints"))
        if isinstance(e, Mapping)
    ]
    byoc = [
        f"{b.get('id')} ({b.get('accountName')})"
        for b in as_items(org.get("byocConfig"))
        if isinstance(b, Mapping)
    ]
    return [
        ("Name", str(org.get("name"))),
        ("ID", str(org.get("id"))),
        ("Created", utc_iso(org.get("createdAt"))),
        ("Private endpoints", ", ".join(endpoints) or "-"),
        ("BYOC", ", ".join(byoc) or "-"),
    ]


def details_text(pairs: Sequence[tuple[str, str]]) -> str:
    """Render (label, value) pairs as aligned ``Label:  value`` lines."""
    width = max((len(label) for label, _ in pairs), default=0) + 1
    return "".join(f"{(label + ':').ljust(width)}  {value}\n" for label, value in pairs)


def dump(value: JsonLike, fmt: str) -> str:
    """Serialise objects for scripts as JSON or YAML (secrets already redacted)."""
    import json

    if fmt == "json":
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    out = io.StringIO()
    yaml.dump(value, out)
    return out.getvalue()
