"""The emulator's OpenAPI 3.1 description, served at ``/openapi.json``.

Built, never written by hand: paths and methods come from the routing table
(``operations.OPERATIONS``), request bodies from the very validation rules the handlers apply
(``validation.Rule.schema``), so a field added to a validation table appears here at once.
Responses: the success envelope of each interface around the operation's resource, and the
error envelopes of every status the emulator may answer (faults and 429 included). With
``specOnly`` the extensions are left out, exactly as the router hides them.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.operations import OPERATIONS, Operation
from reconciler.emulator.pipe_rules import PIPE_SETTINGS
from reconciler.emulator.protocol import DEMO_ORG_ID
from reconciler.emulator.seed import ANALYTICS, ENDPOINT_READY, KAFKA_PIPE, backup_id
from reconciler.emulator.validation import uuid_string

__all__: list[str] = []


_UUID = uuid_string().schema
_SETTINGS = tuple(PIPE_SETTINGS.schema["properties"])


def _resource(*required: str) -> dict[str, Any]:
    return {"type": "object", "required": list(required)}


# What each operation answers with; objects may carry more fields than those required here.
RESOURCES: dict[str, dict[str, Any]] = {
    "pipe": _resource("id", "name", "serviceId", "state", "source", "createdAt", "updatedAt"),
    "service": _resource("id", "name", "state", "tags"),
    "organization": _resource("id", "name", "createdAt", "privateEndpoints"),
    "endpoint": _resource("id", "serviceId", "status"),
    "backup": _resource("id", "serviceId", "status", "startedAt"),
    "dashboard": _resource("id", "name"),
    "settings": _resource(*_SETTINGS),
    "cdcScaling": _resource("replicaCpuMillicores", "replicaMemoryGb"),
    "discovery": {
        "type": "object",
        "required": ["fields", "meta"],
        "properties": {
            "fields": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "type", "optional"],
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string"},
                        "optional": {"type": "boolean"},
                    },
                },
            },
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "deleted": {
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string"}},
        "additionalProperties": False,
    },
}

# Example values of path parameters: the demo seed's, so examples reach real objects.
_EXAMPLES = {
    "organizationId": DEMO_ORG_ID,
    "serviceId": ANALYTICS,
    "pipeId": KAFKA_PIPE,
    "endpointId": ENDPOINT_READY,
    "backupId": backup_id(ANALYTICS, 2),
}

_MANAGEMENT_ERRORS = (400, 401, 403, 404, 405, 409, 424, 429, 502, 503)
_DASHBOARDS_ERRORS = (400, 401, 404, 405, 429, 502, 503)


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _result_schema(name: str) -> dict[str, Any]:
    if name.startswith("["):
        return {"type": "array", "items": {"$ref": f"#/components/schemas/{name[1:-1]}"}}
    return {"$ref": f"#/components/schemas/{name}"}


def _operation(op: Operation) -> dict[str, Any]:
    dashboards = op.template.startswith("/api/v2")
    result = _result_schema(op.result)
    if dashboards:
        ok = {
            "type": "object",
            "required": ["data"],
            "properties": {"data": result},
        }
        responses = {"200": _json(ok, "Success")}
        for status in _DASHBOARDS_ERRORS:
            if status == 401:
                responses["401"] = {"description": "Unauthorized (empty body)"}
            else:
                responses[str(status)] = _json(
                    {"$ref": "#/components/schemas/DashboardsError"}, "Error"
                )
    else:
        ok = {
            "type": "object",
            "required": ["status", "requestId", "result"],
            "properties": {
                "status": {"const": 200},
                "requestId": {"type": "string"},
                "result": result,
            },
        }
        responses = {"200": _json(ok, "Success")}
        for status in _MANAGEMENT_ERRORS:
            responses[str(status)] = _json(
                {"$ref": "#/components/schemas/ManagementError"}, "Error"
            )
    parameters: list[dict[str, Any]] = []
    for name in _path_names(op.template):
        param: dict[str, Any] = {"name": name, "in": "path", "required": True}
        if name == "dashboardId":
            param["schema"] = {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}
        else:
            param["schema"] = _UUID
            param["example"] = _EXAMPLES[name]
        parameters.append(param)
    if op.handler == "list_services":
        parameters.append(
            {
                "name": "filter",
                "in": "query",
                "description": "tag:Key=Value or tag:Key; repeated filters are AND-ed",
                "schema": {"type": "array", "items": {"type": "string", "pattern": "^tag:[^=]"}},
                "style": "form",
                "explode": True,
            }
        )
    out: dict[str, Any] = {
        "operationId": op.handler,
        "summary": op.summary,
        "security": [{"bearer": []}] if dashboards else [{"basic": []}],
        "responses": responses,
    }
    if op.extension:
        out["description"] = "An extension of the real service (absent with specOnly)."
    if op.notes:
        out["description"] = f"{out.get('description', '')} {op.notes}".strip()
    if parameters:
        out["parameters"] = parameters
    if op.body is not None:
        out["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": op.body.schema}},
        }
    return out


def _path_names(template: str) -> list[str]:
    return [part[1:-1] for part in template.split("/") if part.startswith("{")]


def document(spec_only: bool = False) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document of the operations this emulator serves."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        if op.extension and spec_only:
            continue
        paths.setdefault(op.template, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "reconcile emulator",
            "version": "1",
            "description": "Management (/v1, Basic) and dashboards (/api/v2, Bearer) interfaces"
            + (" (spec-only: extensions hidden)" if spec_only else ""),
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "basic": {"type": "http", "scheme": "basic"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
            "schemas": {
                **RESOURCES,
                "ManagementError": {
                    "type": "object",
                    "required": ["status", "requestId", "error"],
                    "properties": {
                        "status": {"type": "integer"},
                        "requestId": {"type": "string"},
                        "error": {"type": "string", "pattern": "^[A-Z_]+: "},
                    },
                },
                "DashboardsError": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {"message": {"type": "string"}},
                },
            },
        },
    }
