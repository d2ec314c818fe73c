"""Read-only views of the live organization: name resolution, formatting, backup freshness.

The ``get`` and ``check`` commands make one call each (``service_backups``, ``service_pipe``,
``backup_freshness``, …) and print what it returns. Reads go through the one read layer
(``reconciler.client.reads``) and the shared ``Client`` (its request budget, retries and error
mapping), with as few requests as possible: a service or pipe NAME costs one list request, a
uuid none. Optional endpoints the real service has but the spec lacks (organization GET, pipe
list, dashboard list) are tried once; a 404/405 becomes a ``ConfigError`` that says what to do
instead. Formatting helpers turn sizes, durations and times into the forms people read (``1.2 GiB``,
``3m 12s``, ``2026-11-21T22:00:00Z``); secrets are replaced by ``(sensitive)`` before any
object leaves this module.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.paths import DASHBOARDS_PATH, PipeIds, organization_path
from reconciler.client.reads import get_endpoint
from reconciler.client.reads import list_services as list_services
from reconciler.model.apierrors import Unsupported
from reconciler.model.errors import ConfigError
from reconciler.model.fields import REDACTED_KEYS, SOURCE_KINDS
from reconciler.model.identity import find_service
from reconciler.model.json import JsonLike, JsonMapping, JsonObject, JsonValue
from reconciler.model.secrets import REDACTED

__all__ = [
    "backup_freshness",
    "get_dashboards",
    "get_organization",
    "list_services",
    "parse_duration",
    "redact_secrets",
    "service_backups",
    "service_cdc_scaling",
]


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([wdhms])")
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


# -- formatting -----------------------------------------------------------------------------


def is_uuid(text: str) -> bool:
    """Tell whether ``text`` is a uuid (used directly) rather than a name (resolved)."""
    return bool(_UUID.match(text))


def human_size(size: object) -> str:
    """Format a byte count in binary units: ``1.2 GiB``."""
    if not isinstance(size, int | float) or isinstance(size, bool):
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def human_duration(seconds: object) -> str:
    """Format seconds as the two largest units: ``3m 12s``, ``4d 2h``."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return "-"
    total = int(abs(seconds))
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
    return ("-" if seconds < 0 else "") + " ".join(parts[:2])


def parse_duration(text: str) -> timedelta:
    """Parse ``26h``, ``3d``, ``90m``, ``1h30m``, ``45s`` or ``2w`` into a timedelta."""
    cleaned = text.strip().lower().replace(" ", "")
    pos, seconds = 0, 0.0
    for match in _DURATION_PART.finditer(cleaned):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not cleaned or pos != len(cleaned):
        raise ConfigError(f"invalid duration {text!r}: use e.g. 90m, 26h, 3d or 1h30m")
    return timedelta(seconds=seconds)


def parse_time(value: object) -> datetime | None:
    """Parse an ISO 8601 time from the API (None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def utc_iso(value: object) -> str:
    """Format a time as UTC ISO 8601 to the second: ``2026-11-21T22:00:00Z``."""
    moment = value if isinstance(value, datetime) else parse_time(value)
    if moment is None:
        return "-" if not value else str(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def redact_secrets(value: JsonLike) -> JsonValue:
    """Return a copy with every secret-bearing member replaced by ``(sensitive)``."""
    if isinstance(value, Mapping):
        return {
            str(k): (REDACTED if k in REDACTED_KEYS and v not in (None, "") else redact_secrets(v))
            for k, v in value.items()
        }
    if isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [redact_secrets(v) for v in value]


def source_kind(pipe: JsonMapping) -> str:
    """Return the pipe's source kind (one of ``SOURCE_KINDS``) or ``?``."""
    source = pipe.get("source")
    if isinstance(source, Mapping):
        for kind in SOURCE_KINDS:
            if isinstance(source.get(kind), Mapping):
                return kind
    return "?"


# -- fetching -------------------------------------------------------------------------------


async def resolve_service(client: Client, org: str, ref: str) -> JsonObject:
    """Return the service named or identified by ``ref`` (a uuid costs no request)."""
    if is_uuid(ref):
        return {"id": ref, "name": ref}
    return pick_service(await list_services(client, org), ref, org)


def pick_service(services: Sequence[JsonObject], ref: str, org: str) -> JsonObject:
    """Find one service by id or name in a services list, else raise ``ConfigError`` saying why."""
    found = find_service(services, ref, org, instead="use its id")
    if isinstance(found, str):
        raise ConfigError(found)
    return dict(found)


async def list_backups(client: Client, org: str, service_id: str) -> list[JsonObject]:
    """Return a service's backups, newest first."""
    items = await reads.list_backups(client, org, service_id)
    return sorted(items, key=lambda b: utc_iso(b.get("startedAt")), reverse=True)


async def get_organization(client: Client, org: str) -> JsonObject:
    """Return the organization; a server without its GET is a ``ConfigError``."""
    try:
        return await reads.get_organization(client, org, name=org)
    except Unsupported as exc:
        raise ConfigError(
            f"the server cannot read an organization (GET {organization_path(org)} answered "
            f"{exc.status}): only the real service's extension offers it"
        ) from None


async def get_dashboards(client: Client) -> list[JsonObject]:
    """Return the live dashboards; a server without the list is a ``ConfigError``."""
    try:
        return await reads.list_dashboards(client)
    except Unsupported:
        raise ConfigError(
            f"the server cannot list dashboards (GET {DASHBOARDS_PATH} answered 404): "
            "only the real service's extension offers it"
        ) from None


# -- one call per command (get backups|endpoint|pipe|pipes, check backups) -----------------


async def service_backups(
    client: Client, org: str, service: str, *, since: timedelta | None, now: datetime
) -> list[JsonObject]:
    """Return a service's backups, newest first (only those started within ``since``)."""
    found = await resolve_service(client, org, service)
    backups = await list_backups(client, org, str(found["id"]))
    if since is None:
        return backups
    limit = now - since
    return [b for b in backups if (t := parse_time(b.get("startedAt"))) and t >= limit]


async def service_endpoint(client: Client, org: str, service: str, endpoint_id: str) -> JsonObject:
    """Return one reverse private endpoint of a service."""
    found = await resolve_service(client, org, service)
    return await get_endpoint(client, org, str(found["id"]), endpoint_id)


async def service_endpoints(client: Client, org: str, service: str) -> list[JsonObject]:
    """Return every reverse private endpoint of a service."""
    found = await resolve_service(client, org, service)
    return await reads.list_endpoints(client, org, str(found["id"]))


async def service_cdc_scaling(client: Client, org: str, service: str) -> JsonObject:
    """Return the CDC capacity of a service (``BadRequest`` while it has no database pipe)."""
    found = await resolve_service(client, org, service)
    return await reads.get_cdc_scaling(client, org, str(found["id"]))


async def service_pipe(client: Client, org: str, service: str, pipe: str) -> JsonObject:
    """Return one pipe of a service, given by id or by name."""
    found = await resolve_service(client, org, service)
    return await find_pipe(client, org, str(found["id"]), pipe)


async def service_pipes(client: Client, org: str, service: str) -> list[JsonObject]:
    """Return every pipe of a service; a server without the pipe list is a ``ConfigError``."""
    found = await resolve_service(client, org, service)
    instead = "show one pipe by id with `reconcile get pipe ID --service …`"
    return await pipe_list(client, org, str(found["id"]), instead=instead)


async def pipe_list(client: Client, org: str, service_id: str, *, instead: str) -> list[JsonObject]:
    """Return every pipe of a service; a server without the list is a ``ConfigError`` ending
    with what to do ``instead``."""
    try:
        return await reads.list_pipes(client, org, service_id)
    except Unsupported:
        raise ConfigError(
            f"the server does not list the pipes of a service (GET …/pipes answered 404): {instead}"
        ) from None


async def find_pipe(client: Client, org: str, service_id: str, ref: str) -> JsonObject:
    """Return one pipe given by id (one GET) or by name (through the service's pipe list)."""
    if is_uuid(ref):
        return await reads.get_pipe(client, PipeIds(org, service_id, ref), name=ref)
    try:
        pipes = await reads.list_pipes(client, org, service_id)
    except Unsupported:
        raise ConfigError(
            f"cannot resolve pipe name {ref!r}: the server does not list the pipes of a service "
            "(GET …/pipes answered 404); give the pipe by id"
        ) from None
    found = [p for p in pipes if p.get("name") == ref]
    if len(found) != 1:
        known = ", ".join(sorted(str(p.get("name")) for p in pipes)) or "none"
        what = "not found" if not found else f"ambiguous ({len(found)} pipes); use its id"
        raise ConfigError(f"pipe {ref!r} {what} in service {service_id} (pipes: {known})")
    return found[0]


async def backup_freshness(
    client: Client, org: str, services: Sequence[str], *, max_age: timedelta, now: datetime
) -> list[BackupFreshness]:
    """Assess each selected service's backups (every service when none is named)."""
    listed: list[JsonObject] = []
    if not services or any(not is_uuid(r) for r in services):
        listed = await list_services(client, org)
    selected = (
        [pick_service(listed, r, org) if not is_uuid(r) else {"id": r, "name": r} for r in services]
        if services
        else listed
    )
    lists = await asyncio.gather(*(list_backups(client, org, str(s["id"])) for s in selected))
    return [assess_backups(s, b, max_age, now) for s, b in zip(selected, lists, strict=True)]


# -- backup freshness -----------------------------------------------------------------------


@dataclass(frozen=True)
class BackupFreshness:
    """How one service's backups compare with the age limit."""

    service_id: str
    service: str
    ok: bool
    last_good: datetime | None
    age: timedelta | None
    last_error: JsonObject | None

    def to_dict(self) -> JsonObject:
        """Return a JSON-friendly description."""
        error = self.last_error
        return {
            "service": self.service,
            "serviceId": self.service_id,
            "ok": self.ok,
            "lastGoodBackup": utc_iso(self.last_good) if self.last_good else None,
            "ageSeconds": int(self.age.total_seconds()) if self.age is not None else None,
            "lastError": None
            if error is None
            else {
                "id": error.get("id"),
                "backupName": error.get("backupName"),
                "startedAt": utc_iso(error.get("startedAt")),
                "finishedAt": utc_iso(error.get("finishedAt")),
            },
        }


def backup_time(backup: JsonMapping) -> datetime | None:
    """Return when a backup completed (its start when the finish is unknown)."""
    return parse_time(backup.get("finishedAt")) or parse_time(backup.get("startedAt"))


def assess_backups(
    service: JsonMapping,
    backups: Sequence[JsonObject],
    max_age: timedelta,
    now: datetime,
) -> BackupFreshness:
    """Tell whether a service has a ``done`` backup newer than ``max_age`` at ``now``."""
    done = [(t, b) for b in backups if b.get("status") == "done" and (t := backup_time(b))]
    errors = [(t, b) for b in backups if b.get("status") == "error" and (t := backup_time(b))]
    last_good = max((t for t, _ in done), default=None)
    last_error = max(errors, key=lambda pair: pair[0])[1] if errors else None
    age = now - last_good if last_good else None
    return BackupFreshness(
        service_id=str(service.get("id")),
        service=str(service.get("name") or service.get("id")),
        ok=age is not None and age <= max_age,
        last_good=last_good,
        age=age,
        last_error=dict(last_error) if last_error else None,
    )
