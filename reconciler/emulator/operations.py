"""The routing table: every operation the emulator serves, and what its description says.

One row per endpoint (method, path template, handler name, extension?, summary, result, body
rule, notes): ``app`` builds its router from it and ``openapi`` its description, so the two
cannot disagree. ``extension`` marks what the spec lacks (hidden with ``specOnly``).
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.emulator import (
    cdc,
    discovery,
    organization_bodies,
    patch_bodies,
    pipe_bodies,
    pipe_rules,
    reverse_endpoints,
    validation,
)

__all__: list[str] = []


_ORG = "/v1/organizations/{organizationId}"
_SVC = _ORG + "/services/{serviceId}"


@dataclass(frozen=True)
class Operation:
    """One endpoint: the routing table's row and what the OpenAPI description says of it.

    ``body`` is the validation rule the handler applies to the request body (its schema is the
    documented one), ``result`` names the resource it answers with (``pipe``, ``[pipe]`` for a
    list) in ``reconciler.emulator.openapi``'s resource table.
    """

    method: str
    template: str
    handler: str
    extension: bool
    summary: str
    result: str
    body: validation.Rule | None = None
    notes: str = ""


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", _SVC + "/pipes/{pipeId}", "get_pipe", False, "Get a pipe", "pipe"),
    Operation(
        "PATCH",
        _SVC + "/pipes/{pipeId}",
        "patch_pipe",
        False,
        "Update a pipe (merge)",
        "pipe",
        patch_bodies.PIPE_UPDATE,
    ),
    Operation("GET", _ORG + "/services", "list_services", False, "List services", "[service]"),
    Operation(
        "GET",
        _SVC + "/pipesReversePrivateEndpoints/{endpointId}",
        "get_endpoint",
        False,
        "Get a reverse private endpoint",
        "endpoint",
    ),
    Operation(
        "PATCH",
        _ORG,
        "patch_organization",
        False,
        "Update the organization",
        "organization",
        organization_bodies.ORGANIZATION_UPDATE,
    ),
    Operation("GET", _SVC + "/backups", "list_backups", False, "List backups", "[backup]"),
    Operation(
        "POST",
        "/api/v2/dashboards",
        "create_dashboard",
        False,
        "Create a dashboard",
        "dashboard",
        organization_bodies.DASHBOARD,
    ),
    Operation("GET", _ORG, "get_organization", True, "Get the organization", "organization"),
    Operation("GET", _SVC + "/pipes", "list_pipes", True, "List a service's pipes", "[pipe]"),
    Operation(
        "POST",
        _SVC + "/pipes",
        "create_pipe",
        True,
        "Create a pipe (Provisioning, then Running)",
        "pipe",
        pipe_bodies.PIPE_CREATE,
        "Beyond the schema, the rules a pipe needs to run are refused with 400: a kind's "
        "required fields, credentials that fit the authentication, every destination column "
        "mapped once. Names need not be unique within a service.",
    ),
    Operation("DELETE", _SVC + "/pipes/{pipeId}", "delete_pipe", True, "Delete a pipe", "deleted"),
    Operation(
        "PATCH",
        _SVC + "/pipes/{pipeId}/state",
        "command_pipe",
        True,
        "Start, stop or resync a pipe",
        "pipe",
        pipe_bodies.STATE_COMMAND,
        "start: Provisioning, then Running; stop: Stopping, then Stopped (postgres: Pausing, "
        "then Paused); resync (postgres only): Resync, then Running; each transitionMs later. "
        "A command for the state the pipe is in or heading to changes nothing.",
    ),
    Operation(
        "PATCH",
        _SVC + "/pipes/{pipeId}/scaling",
        "scale_pipe",
        True,
        "Change a pipe's scaling",
        "pipe",
        pipe_bodies.SCALING,
    ),
    Operation(
        "GET",
        "/v1/organizations",
        "list_organizations",
        True,
        "List the key's organizations",
        "[organization]",
    ),
    Operation("GET", _SVC, "get_service", True, "Get a service", "service"),
    Operation("GET", _SVC + "/backups/{backupId}", "get_backup", True, "Get a backup", "backup"),
    Operation(
        "GET",
        _SVC + "/pipes/{pipeId}/settings",
        "get_pipe_settings",
        True,
        "Get a pipe's settings",
        "settings",
    ),
    Operation(
        "PUT",
        _SVC + "/pipes/{pipeId}/settings",
        "put_pipe_settings",
        True,
        "Replace a pipe's settings",
        "settings",
        pipe_rules.PIPE_SETTINGS,
        "A setting left out or null takes the service's default.",
    ),
    Operation(
        "POST",
        _SVC + "/pipes/schemaDiscovery",
        "discover_schema",
        True,
        "Discover the fields of a kafka or kinesis source",
        "discovery",
        discovery.REQUEST,
        "Deterministic: the fields are inferred from sample messages the emulator holds per "
        "kafka topic and kinesis stream (a default sample for any other).",
    ),
    Operation(
        "GET",
        _SVC + "/pipesCdcScaling",
        "get_cdc_scaling",
        True,
        "Get the service's CDC scaling",
        "cdcScaling",
        notes="400 while the service has no database pipe.",
    ),
    Operation(
        "PATCH",
        _SVC + "/pipesCdcScaling",
        "patch_cdc_scaling",
        True,
        "Change the service's CDC scaling",
        "cdcScaling",
        cdc.PATCH,
        "One CPU core per 4 GB of memory: give either field (the other follows) or both "
        "agreeing. 400 while the service has no database pipe.",
    ),
    Operation(
        "GET",
        _SVC + "/pipesReversePrivateEndpoints",
        "list_endpoints",
        True,
        "List the service's reverse private endpoints",
        "[endpoint]",
    ),
    Operation(
        "POST",
        _SVC + "/pipesReversePrivateEndpoints",
        "create_endpoint",
        True,
        "Create a reverse private endpoint (Provisioning, then Ready)",
        "endpoint",
        reverse_endpoints.CREATE,
        "The type decides the connection fields it needs and takes.",
    ),
    Operation(
        "PATCH",
        _SVC + "/pipesReversePrivateEndpoints/{endpointId}",
        "update_endpoint",
        True,
        "Change a reverse private endpoint's custom private DNS mappings",
        "endpoint",
        reverse_endpoints.UPDATE,
    ),
    Operation(
        "DELETE",
        _SVC + "/pipesReversePrivateEndpoints/{endpointId}",
        "delete_endpoint",
        True,
        "Delete a reverse private endpoint no pipe uses",
        "deleted",
    ),
    Operation(
        "GET", "/api/v2/dashboards", "list_dashboards", True, "List dashboards", "[dashboard]"
    ),
    Operation(
        "GET",
        "/api/v2/dashboards/{dashboardId}",
        "get_dashboard",
        True,
        "Get a dashboard",
        "dashboard",
    ),
    Operation(
        "PUT",
        "/api/v2/dashboards/{dashboardId}",
        "put_dashboard",
        True,
        "Replace a dashboard",
        "dashboard",
        organization_bodies.DASHBOARD,
    ),
    Operation(
        "DELETE",
        "/api/v2/dashboards/{dashboardId}",
        "delete_dashboard",
        True,
        "Delete a dashboard",
        "deleted",
    ),
)
