"""The in-memory store: its data, file, lookups, and the organization and dashboard updates.

Everything lives in one JSON-shaped dict (the same shape ``GET /_emulator/data`` returns and
``--data FILE`` persists), so that loading, saving and resetting are trivial. Records carry
their secrets as sent (credentials, access keys, connection strings); the ``public_*`` views
strip write-only fields and mask connection strings, which is the only place where a stored
record becomes a response.

Each lookup answers the 404 of the API, so handlers can chain them; a pipe's (or reverse
private endpoint's) transitional state is settled by every lookup (``lifecycle.settle``),
never by a timer. An organization PATCH is applied to a copy and committed only when every
check passed. Changes to pipes (create, delete, state commands, scaling, settings, PATCH)
are ``pipe_changes``'.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reconciler.emulator import lifecycle, reverse_endpoints
from reconciler.emulator.protocol import ApiError
from reconciler.emulator.seed import CLOUD_PROVIDER, REGION

__all__: list[str] = []


_WRITE_ONLY = ("credentials", "accessKey", "serviceAccountKey")
_SECRET_KEYS = ("key", "signature", "password", "secret", "token", "sig")


def mask_connection_string(value: str) -> str:
    """Mask every secret-looking value of ``k=v;k=v`` (the whole string when it has no pairs)."""
    parts = [p for p in value.split(";") if p]
    if not parts or any("=" not in p for p in parts):
        return "****"
    masked = []
    for part in parts:
        key, _, _ = part.partition("=")
        secret = any(s in key.lower() for s in _SECRET_KEYS)
        masked.append(f"{key}=****" if secret else part)
    return ";".join(masked)


def public_pipe(pipe: dict[str, Any]) -> dict[str, Any]:
    """The pipe as the API shows it: no credentials or access keys, connection string masked."""
    view = dict(pipe)
    source = {}
    for kind, settings in pipe["source"].items():
        shown = {k: v for k, v in settings.items() if k not in _WRITE_ONLY}
        registry = shown.get("schemaRegistry")
        if isinstance(registry, dict) and "credentials" in registry:
            shown["schemaRegistry"] = {k: v for k, v in registry.items() if k != "credentials"}
        if isinstance(shown.get("connectionString"), str):
            shown["connectionString"] = mask_connection_string(shown["connectionString"])
        source[kind] = shown
    view["source"] = source
    return view


def public_service(service: dict[str, Any]) -> dict[str, Any]:
    """The service as the API shows it (without the store's organization link)."""
    return {k: v for k, v in service.items() if k != "organizationId"}


def public_dashboard(dashboard: dict[str, Any]) -> dict[str, Any]:
    """The dashboard as the API shows it (without the store's organization link)."""
    return {k: v for k, v in dashboard.items() if k != "organizationId"}


class Store:
    """The emulator's data, its lookups and its updates; saved to ``path`` after every change."""

    def __init__(self, data: dict[str, Any], path: Path | None = None):
        self.data = data
        self.path = path
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    @classmethod
    def load(cls, path: Path) -> Store:
        """A store read from a file written by ``save``."""
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in ("organizations", "services", "pipes", "reversePrivateEndpoints", "backups"):
            if not isinstance(data, dict) or not isinstance(data.get(key), dict):
                raise ValueError(f"not an emulator data file (no {key!r} object)")
        data.setdefault("dashboards", {})
        data.setdefault("transitions", {})
        data.setdefault("endpointTransitions", {})
        data.setdefault("cdcScaling", {})
        return cls(data, path)

    def save(self) -> None:
        """Write the store to its file atomically (temp file + rename), if it has one."""
        if self.path is None:
            return
        directory = self.path.parent
        fd, tmp = tempfile.mkstemp(prefix=".emulator-", suffix=".json", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.data, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # Lookups: each raises the 404 the API gives, so handlers can chain them.

    def organization(self, org_id: str) -> dict[str, Any]:
        """The organization, or a 404."""
        org = self.data["organizations"].get(org_id)
        if org is None:
            raise ApiError(404, f"Organization {org_id} not found")
        result: dict[str, Any] = org
        return result

    def services_of(self, org_id: str) -> list[dict[str, Any]]:
        """Every service of the organization, in seed order."""
        return [s for s in self.data["services"].values() if s["organizationId"] == org_id]

    def service(self, org_id: str, service_id: str) -> dict[str, Any]:
        """The service of that organization, or a 404."""
        service = self.data["services"].get(service_id)
        if service is None or service["organizationId"] != org_id:
            raise ApiError(404, f"Service {service_id} not found")
        result: dict[str, Any] = service
        return result

    def pipe(self, service_id: str, pipe_id: str) -> dict[str, Any]:
        """The pipe of that service, its state settled, or a 404 (also for another service's)."""
        pipe = self.data["pipes"].get(pipe_id)
        if pipe is None or pipe["serviceId"] != service_id:
            raise ApiError(404, f"Pipe {pipe_id} not found")
        if lifecycle.settle(self.data, pipe, self.clock()):
            self.save()
        result: dict[str, Any] = pipe
        return result

    def pipes_of(self, service_id: str) -> list[dict[str, Any]]:
        """Every pipe of the service, their states settled."""
        pipes = [p for p in self.data["pipes"].values() if p["serviceId"] == service_id]
        if self.data.get("transitions"):
            now = self.clock()
            moved = [lifecycle.settle(self.data, p, now) for p in pipes]
            if any(moved):
                self.save()
        return pipes

    def endpoint(self, service_id: str, endpoint_id: str) -> dict[str, Any]:
        """The reverse private endpoint of that service, or a 404."""
        endpoint = self.data["reversePrivateEndpoints"].get(endpoint_id)
        if endpoint is None or endpoint["serviceId"] != service_id:
            raise ApiError(404, f"Reverse private endpoint {endpoint_id} not found")
        if reverse_endpoints.settle(self.data, endpoint, self.clock()):
            self.save()
        result: dict[str, Any] = endpoint
        return result

    def endpoints_of(self, service_id: str) -> list[dict[str, Any]]:
        """Every reverse private endpoint of the service, their statuses settled."""
        found = [
            e for e in self.data["reversePrivateEndpoints"].values() if e["serviceId"] == service_id
        ]
        now = self.clock()
        if any([reverse_endpoints.settle(self.data, e, now) for e in found]):
            self.save()
        return found

    def backups_of(self, service_id: str) -> list[dict[str, Any]]:
        """The service's backups, newest first."""
        backups = self.data["backups"].get(service_id, [])
        return sorted(backups, key=lambda b: b["startedAt"], reverse=True)

    def backup(self, service_id: str, backup_id: str) -> dict[str, Any]:
        """One backup of the service, or a 404."""
        for backup in self.data["backups"].get(service_id, []):
            if backup["id"] == backup_id:
                result: dict[str, Any] = backup
                return result
        raise ApiError(404, f"Backup {backup_id} not found")

    # Updates of the organization.

    def update_organization(self, org: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """Apply a validated organization PATCH (remove, then add, private endpoints)."""
        new = copy.deepcopy(org)
        if "name" in body:
            new["name"] = body["name"]
        if "enableCoreDumps" in body:
            new["enableCoreDumps"] = body["enableCoreDumps"]
        changes = body.get("privateEndpoints", {})
        endpoints: list[dict[str, Any]] = new["privateEndpoints"]
        for i, item in enumerate(changes.get("remove", [])):
            if not any(e["id"] == item["id"] for e in endpoints):
                raise ApiError(
                    400,
                    f"privateEndpoints.remove.{i}: private endpoint {item['id']} is not present",
                )
            endpoints[:] = [e for e in endpoints if e["id"] != item["id"]]
        for i, item in enumerate(changes.get("add", [])):
            if any(e["id"] == item["id"] for e in endpoints):
                raise ApiError(
                    400,
                    f"privateEndpoints.add.{i}: private endpoint {item['id']} is already present",
                )
            endpoints.append(
                {
                    "id": item["id"],
                    "description": item.get("description", ""),
                    # The service fills these in from the organization when left out.
                    "cloudProvider": item.get("cloudProvider", CLOUD_PROVIDER),
                    "region": item.get("region", REGION),
                }
            )
        if new != org:
            self.data["organizations"][org["id"]] = new
            self.save()
        return new

    # Dashboards, kept per organization so that another organization's token sees its own set.

    def dashboards_of(self, org_id: str) -> list[dict[str, Any]]:
        """The organization's dashboards, oldest first."""
        return [d for d in self.data["dashboards"].values() if d["organizationId"] == org_id]

    def dashboard(self, org_id: str, dashboard_id: str) -> dict[str, Any]:
        """The dashboard, or a 404 (also when it belongs to another organization)."""
        found = self.data["dashboards"].get(dashboard_id)
        if found is None or found["organizationId"] != org_id:
            raise ApiError(404, "Dashboard not found")
        result: dict[str, Any] = found
        return result

    def create_dashboard(self, org_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Store a new dashboard with fresh ids for it and every tile; echoes the body's fields."""
        dashboard_id = _new_id()
        record = {"id": dashboard_id, **_with_tile_ids(body, set())}
        record["organizationId"] = org_id
        self.data["dashboards"][dashboard_id] = record
        self.save()
        return record

    def replace_dashboard(
        self, org_id: str, dashboard_id: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Replace name/tiles/tags wholesale, keeping the ids of tiles that carry an existing one."""
        old = self.dashboard(org_id, dashboard_id)
        known = {t.get("id") for t in old.get("tiles", [])}
        record = {"id": dashboard_id, **_with_tile_ids(body, known)}
        record["organizationId"] = org_id
        self.data["dashboards"][dashboard_id] = record
        self.save()
        return record

    def delete_dashboard(self, org_id: str, dashboard_id: str) -> None:
        """Delete the dashboard, or a 404."""
        self.dashboard(org_id, dashboard_id)
        del self.data["dashboards"][dashboard_id]
        self.save()


def _new_id() -> str:
    # Dashboard and tile ids look like the real service's: 24 hex digits, not uuids.
    return uuid.uuid4().hex[:24]


def _with_tile_ids(body: dict[str, Any], known: set[Any]) -> dict[str, Any]:
    result = {k: v for k, v in body.items() if k != "id"}
    if "tiles" in body:
        result["tiles"] = [
            {**tile, "id": tile["id"] if tile.get("id") in known else _new_id()}
            for tile in body["tiles"]
        ]
    return result
