"""The API routes of both interfaces and their handlers.

Routing is a small table (``operations.OPERATIONS``: method, path pattern, handler, interface,
extension?) rather than a framework router, because the emulator must decide three things a generic router blurs: an
unknown path is a 404 in the interface's own error shape, a known path with the wrong method is
a 405, and with ``specOnly`` the extensions of the real service vanish *exactly* like unknown
routes (even where the path also matches a spec route with another method). A fixed path
segment outranks a parameter (``…/pipes/schemaDiscovery`` is no pipe id). Each request is
checked in the order the real service does: route, authentication, path parameters, the
caller's organization (403), body, then the resources (404) and their state (424, 400).
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from reconciler.emulator import create, organization_bodies, patch_bodies, pipe_changes
from reconciler.emulator.faults import EmulatorConfig
from reconciler.emulator.handlers import Call, Handlers
from reconciler.emulator.operations import OPERATIONS
from reconciler.emulator.protocol import (
    ApiError,
    Identities,
    dashboards_error,
    dashboards_ok,
    management_error,
    management_ok,
    require_uuid,
)
from reconciler.emulator.store import Store, public_dashboard, public_pipe, public_service

__all__: list[str] = []


Handler = Callable[[Call], Response]


@dataclass(frozen=True)
class Route:
    """One row of the routing table; ``literals`` counts its fixed path segments."""

    method: str
    pattern: re.Pattern[str]
    handler: Handler
    dashboards: bool
    extension: bool
    literals: int


def _compile(template: str) -> re.Pattern[str]:
    regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
    return re.compile(regex)


class Api(Handlers):
    """Both interfaces: ``handle`` turns a ``Call`` into a response, never raising."""

    def __init__(self, store: Store, config: EmulatorConfig, identities: Identities):
        self.store = store
        self.config = config
        self.identities = identities
        self.routes = [
            Route(
                op.method,
                _compile(op.template),
                getattr(self, op.handler),
                op.template.startswith("/api/v2"),
                op.extension,
                sum(1 for part in op.template.split("/") if "{" not in part),
            )
            for op in OPERATIONS
        ]

    def handle(self, call: Call) -> Response:
        """Route, authenticate and run the handler; every failure becomes an error response."""
        dashboards = call.path.startswith("/api/v2")
        try:
            return self._dispatch(call)
        except ApiError as err:
            return self.error(err, call.request_id, dashboards)
        except Exception:
            # Never crash on anything: answer like a real server's unexpected failure.
            traceback.print_exc(file=sys.stderr)
            return self.error(ApiError(500, "Unexpected error"), call.request_id, dashboards)

    @staticmethod
    def error(err: ApiError, request_id: str, dashboards: bool) -> Response:
        """An error in the shape of the interface the request came in on."""
        return dashboards_error(err) if dashboards else management_error(err, request_id)

    def _dispatch(self, call: Call) -> Response:
        candidates: list[tuple[Route, re.Match[str]]] = []
        hidden = False
        matches = [(r, r.pattern.fullmatch(call.path)) for r in self.routes]
        # A fixed segment beats a parameter: …/pipes/schemaDiscovery is not a pipe's path.
        most = max((r.literals for r, m in matches if m is not None), default=0)
        for route, match in matches:
            if match is None or route.literals < most:
                continue
            if route.extension and self.config.spec_only:
                # A hidden extension is a 404 even where a spec route shares its path.
                hidden = hidden or route.method == call.method
                continue
            candidates.append((route, match))
        if hidden or not candidates:
            raise ApiError(
                404, "Not Found" if call.path.startswith("/api/v2") else f"No route for {call.path}"
            )
        authorization = call.headers.get("authorization")
        if candidates[0][0].dashboards:
            call.identity = self.identities.bearer(authorization)
        else:
            call.identity = self.identities.basic(authorization)
        for route, match in candidates:
            if route.method == call.method:
                call.params = match.groupdict()
                return route.handler(call)
        raise ApiError(405, f"Method {call.method} is not allowed on {call.path}")

    # Management handlers.

    def get_pipe(self, call: Call) -> Response:
        """GET one pipe."""
        service = self._service(call)
        pipe_id = require_uuid(call.params["pipeId"], "pipeId")
        return management_ok(public_pipe(self.store.pipe(service["id"], pipe_id)), call.request_id)

    def patch_pipe(self, call: Call) -> Response:
        """PATCH one pipe (validated body, merge semantics)."""
        pipe_id = self._pipe_call(call)
        body = patch_bodies.validate_pipe_update(self._json(call))
        service = self._service(call)
        pipe = self.store.pipe(service["id"], pipe_id)
        updated = pipe_changes.update_pipe(self.store, service, pipe, body)
        return management_ok(public_pipe(updated), call.request_id)

    def create_pipe(self, call: Call) -> Response:
        """POST a pipe (extension): validated as the service does, answered Provisioning."""
        self._org(call)
        require_uuid(call.params["serviceId"], "serviceId")
        body = create.validate_pipe_create(self._json(call))
        service = self._service(call)
        pipe = pipe_changes.create_pipe(self.store, service, body, self.config.transition_ms)
        return management_ok(public_pipe(pipe), call.request_id)

    def delete_pipe(self, call: Call) -> Response:
        """DELETE a pipe (extension); answers ``{"id": …}``."""
        pipe_id = self._pipe_call(call)
        service = self._service(call)
        pipe_changes.delete_pipe(self.store, service, self.store.pipe(service["id"], pipe_id))
        return management_ok({"id": pipe_id}, call.request_id)

    def command_pipe(self, call: Call) -> Response:
        """PATCH a pipe's state with a start, stop or resync command (extension)."""
        pipe_id = self._pipe_call(call)
        command = create.validate_state_command(self._json(call))
        service = self._service(call)
        pipe = self.store.pipe(service["id"], pipe_id)
        updated = pipe_changes.command_pipe(
            self.store, service, pipe, command, self.config.transition_ms
        )
        return management_ok(public_pipe(updated), call.request_id)

    def scale_pipe(self, call: Call) -> Response:
        """PATCH a pipe's scaling (extension): only the fields given change."""
        pipe_id = self._pipe_call(call)
        body = create.validate_scaling(self._json(call))
        service = self._service(call)
        pipe = self.store.pipe(service["id"], pipe_id)
        return management_ok(
            public_pipe(pipe_changes.scale_pipe(self.store, service, pipe, body)), call.request_id
        )

    def list_pipes(self, call: Call) -> Response:
        """GET every pipe of a service (extension)."""
        service = self._service(call)
        pipes = [public_pipe(p) for p in self.store.pipes_of(service["id"])]
        return management_ok(pipes, call.request_id)

    def list_services(self, call: Call) -> Response:
        """GET the organization's services, optionally filtered by tags (AND-ed)."""
        org = self._org(call)
        wanted: list[tuple[str, str | None]] = []
        for name, value in call.query:
            if name != "filter":
                continue
            kind, _, rest = value.partition(":")
            key, eq, tag_value = rest.partition("=")
            if kind != "tag" or not key:
                raise ApiError(400, f"Invalid filter {value!r}: expected tag:Key=Value or tag:Key")
            wanted.append((key, tag_value if eq else None))
        result = []
        for service in self.store.services_of(org["id"]):
            tags = service.get("tags", [])
            if all(_has_tag(tags, key, val) for key, val in wanted):
                result.append(public_service(service))
        return management_ok(result, call.request_id)

    def get_organization(self, call: Call) -> Response:
        """GET the organization (extension)."""
        return management_ok(self._org(call), call.request_id)

    def patch_organization(self, call: Call) -> Response:
        """PATCH the organization: name and private endpoints add/remove."""
        org = self._org(call)
        body = organization_bodies.validate_organization_update(self._json(call))
        return management_ok(self.store.update_organization(org, body), call.request_id)

    def list_backups(self, call: Call) -> Response:
        """GET the service's backups, newest first."""
        service = self._service(call)
        return management_ok(self.store.backups_of(service["id"]), call.request_id)

    # Dashboards handlers: dashboards belong to the token's organization.

    def create_dashboard(self, call: Call) -> Response:
        """POST a dashboard; answers 200 with ids assigned."""
        body = organization_bodies.validate_dashboard(self._json(call, dashboards=True))
        record = self.store.create_dashboard(call.caller.organization_id, body)
        return dashboards_ok(public_dashboard(record))

    def list_dashboards(self, call: Call) -> Response:
        """GET every dashboard of the caller's organization (extension)."""
        found = self.store.dashboards_of(call.caller.organization_id)
        return dashboards_ok([public_dashboard(d) for d in found])

    def get_dashboard(self, call: Call) -> Response:
        """GET one dashboard (extension)."""
        found = self.store.dashboard(call.caller.organization_id, call.params["dashboardId"])
        return dashboards_ok(public_dashboard(found))

    def put_dashboard(self, call: Call) -> Response:
        """PUT (replace) one dashboard (extension)."""
        self.store.dashboard(call.caller.organization_id, call.params["dashboardId"])
        body = organization_bodies.validate_dashboard(self._json(call, dashboards=True))
        record = self.store.replace_dashboard(
            call.caller.organization_id, call.params["dashboardId"], body
        )
        return dashboards_ok(public_dashboard(record))

    def delete_dashboard(self, call: Call) -> Response:
        """DELETE one dashboard (extension); answers ``{"data": {"id": …}}``."""
        self.store.delete_dashboard(call.caller.organization_id, call.params["dashboardId"])
        return dashboards_ok({"id": call.params["dashboardId"]})


def _has_tag(tags: list[dict[str, Any]], key: str, value: str | None) -> bool:
    return any(t.get("key") == key and (value is None or t.get("value") == value) for t in tags)
