"""The checks every management handler shares, and the handlers of the pipe family's extras.

``Handlers`` is the base of ``app.Api``: the caller's organization (403), the path's ids
(400 when not uuids, 404 when unknown), the JSON body; and the operations beyond the spec that
the real service's contract lists: organizations, one service, one backup, a pipe's settings,
CDC scaling, reverse private endpoints (list, create, update, delete) and schema discovery.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import Response

from reconciler.emulator import cdc, discovery, pipe_changes, reverse_endpoints
from reconciler.emulator.faults import EmulatorConfig
from reconciler.emulator.pipe_rules import PIPE_SETTINGS
from reconciler.emulator.protocol import ApiError, Identity, management_ok, require_uuid
from reconciler.emulator.store import Store, public_service
from reconciler.emulator.validation import management

__all__: list[str] = []


_SETTINGS_DEFAULTS = {
    key: schema["default"] for key, schema in PIPE_SETTINGS.schema["properties"].items()
}


@dataclass
class Call:
    """One API request as the handlers see it."""

    method: str
    path: str
    query: list[tuple[str, str]]
    headers: Headers
    body: bytes
    request_id: str
    params: dict[str, str] = field(default_factory=dict)
    identity: Identity | None = None

    @property
    def caller(self) -> Identity:
        """The authenticated caller (set by the router before any handler runs)."""
        assert self.identity is not None
        return self.identity


class Handlers:
    """Shared checks and the extra management handlers, over one store and configuration."""

    store: Store
    config: EmulatorConfig

    def _org(self, call: Call) -> dict[str, Any]:
        org_id = require_uuid(call.params["organizationId"], "organizationId")
        if org_id != call.caller.organization_id:
            raise ApiError(403, f"Key is not allowed to access organization {org_id}")
        return self.store.organization(org_id)

    def _service(self, call: Call) -> dict[str, Any]:
        org = self._org(call)
        service_id = require_uuid(call.params["serviceId"], "serviceId")
        return self.store.service(org["id"], service_id)

    @staticmethod
    def _json(call: Call, dashboards: bool = False) -> Any:
        try:
            return json.loads(call.body)
        except (ValueError, RecursionError):
            if dashboards:
                raise ApiError(400, "Body validation failed: body is not valid JSON") from None
            raise ApiError(400, "Request body is not valid JSON") from None

    def _pipe_call(self, call: Call) -> str:
        """The checks before a pipe write's body: organization (403), then the path's ids."""
        self._org(call)
        require_uuid(call.params["serviceId"], "serviceId")
        return require_uuid(call.params["pipeId"], "pipeId")

    def _service_call(self, call: Call) -> None:
        """The checks before a service write's body: organization (403), then the service id."""
        self._org(call)
        require_uuid(call.params["serviceId"], "serviceId")

    def list_organizations(self, call: Call) -> Response:
        """GET the organizations the key belongs to (one: the key's own)."""
        org = self.store.organization(call.caller.organization_id)
        return management_ok([org], call.request_id)

    def get_service(self, call: Call) -> Response:
        """GET one service."""
        return management_ok(public_service(self._service(call)), call.request_id)

    def get_backup(self, call: Call) -> Response:
        """GET one backup of a service."""
        service = self._service(call)
        backup_id = require_uuid(call.params["backupId"], "backupId")
        return management_ok(self.store.backup(service["id"], backup_id), call.request_id)

    def get_pipe_settings(self, call: Call) -> Response:
        """GET a pipe's settings."""
        service = self._service(call)
        pipe = self.store.pipe(service["id"], require_uuid(call.params["pipeId"], "pipeId"))
        return management_ok(pipe["settings"], call.request_id)

    def put_pipe_settings(self, call: Call) -> Response:
        """PUT (replace) a pipe's settings: a setting left out or null takes its default."""
        pipe_id = self._pipe_call(call)
        body = management(PIPE_SETTINGS, self._json(call))
        service = self._service(call)
        pipe = self.store.pipe(service["id"], pipe_id)
        settings = pipe_changes.replace_settings(
            self.store, service, pipe, body, _SETTINGS_DEFAULTS
        )
        return management_ok(settings, call.request_id)

    def get_cdc_scaling(self, call: Call) -> Response:
        """GET the service's CDC scaling (400 while it has no database pipe)."""
        service = self._service(call)
        cdc.require_database_pipe(service, self.store.pipes_of(service["id"]))
        return management_ok(cdc.current(self.store.data, service["id"]), call.request_id)

    def patch_cdc_scaling(self, call: Call) -> Response:
        """PATCH the service's CDC scaling (one core per 4 GB; 400 without a database pipe)."""
        self._service_call(call)
        wanted = cdc.validate(self._json(call))
        service = self._service(call)
        cdc.require_database_pipe(service, self.store.pipes_of(service["id"]))
        result = cdc.change(self.store.data, service["id"], wanted)
        self.store.save()
        return management_ok(result, call.request_id)

    def list_endpoints(self, call: Call) -> Response:
        """GET every reverse private endpoint of the service."""
        service = self._service(call)
        return management_ok(self.store.endpoints_of(service["id"]), call.request_id)

    def get_endpoint(self, call: Call) -> Response:
        """GET one reverse private endpoint."""
        service = self._service(call)
        endpoint_id = require_uuid(call.params["endpointId"], "reversePrivateEndpointId")
        return management_ok(self.store.endpoint(service["id"], endpoint_id), call.request_id)

    def create_endpoint(self, call: Call) -> Response:
        """POST a reverse private endpoint: Provisioning, Ready after the transition time."""
        self._service_call(call)
        body = reverse_endpoints.validate_create(self._json(call))
        service = self._service(call)
        ready_at = reverse_endpoints.later(self.store.clock(), self.config.transition_ms)
        record = reverse_endpoints.create(self.store.data, service["id"], body, ready_at)
        self.store.save()
        return management_ok(record, call.request_id)

    def update_endpoint(self, call: Call) -> Response:
        """PATCH a reverse private endpoint (only its custom private DNS mappings)."""
        self._service_call(call)
        endpoint_id = require_uuid(call.params["endpointId"], "reversePrivateEndpointId")
        body = reverse_endpoints.validate_update(self._json(call))
        service = self._service(call)
        endpoint = self.store.endpoint(service["id"], endpoint_id)
        if reverse_endpoints.update(endpoint, body):
            self.store.save()
        return management_ok(endpoint, call.request_id)

    def delete_endpoint(self, call: Call) -> Response:
        """DELETE a reverse private endpoint no pipe uses; answers ``{"id": …}``."""
        service = self._service(call)
        endpoint_id = require_uuid(call.params["endpointId"], "reversePrivateEndpointId")
        reverse_endpoints.delete(self.store.data, self.store.endpoint(service["id"], endpoint_id))
        self.store.save()
        return management_ok({"id": endpoint_id}, call.request_id)

    def discover_schema(self, call: Call) -> Response:
        """POST a kafka or kinesis source: the fields its sample messages carry."""
        self._service_call(call)
        kind, source = discovery.validate(self._json(call))
        self._service(call)
        return management_ok(discovery.discover(kind, source), call.request_id)
