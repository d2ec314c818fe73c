"""Admin paths for tests and benchmarks, outside the API prefixes (``/_emulator/...``).

They let a test read the request log, reset or re-scale the seed, reconfigure latency, faults
and the rate limit of a shared running server, read the whole store (secrets included: this is
a test tool) and move resources between states the API cannot change (pause a pipe, make an
endpoint Ready, idle a service). They take the demo organization's Basic credentials, answer in
the management envelope, and are never logged, limited, delayed or faulted.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.responses import Response

from reconciler.emulator import lifecycle, reverse_endpoints
from reconciler.emulator.protocol import ApiError, management_error, management_ok

if TYPE_CHECKING:
    from reconciler.emulator.pipeline import Runtime

__all__: list[str] = []


PIPE_STATES = [
    "Unknown",
    "Provisioning",
    "Running",
    "Degraded",
    "Stopping",
    "Stopped",
    "Failed",
    "Completed",
    "InternalError",
    "Setup",
    "Snapshot",
    "Paused",
    "Pausing",
    "Modifying",
    "Resync",
]
ENDPOINT_STATUSES = [
    "Unknown",
    "Provisioning",
    "Deleting",
    "Ready",
    "Failed",
    "PendingAcceptance",
    "Rejected",
    "Expired",
]
SERVICE_STATES = [
    "running",
    "idle",
    "stopped",
    "stopping",
    "starting",
    "provisioning",
    "awaking",
    "degraded",
    "failed",
]

_STATE_PATH = re.compile(r"/_emulator/(pipes|endpoints|services)/([^/]+)/(state|status)")


class Admin:
    """The admin handlers over one emulator runtime."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def handle(self, method: str, path: str, headers: Headers, body: bytes) -> Response:
        """Answer one admin request (management envelope; never raises)."""
        request_id = str(uuid.uuid4())
        try:
            identity = self.runtime.identities.basic(headers.get("authorization"))
            if identity is not self.runtime.identities.demo:
                raise ApiError(403, "Admin paths need the demo organization's key")
            return management_ok(self._route(method, path, body), request_id)
        except ApiError as err:
            return management_error(err, request_id)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            return management_error(ApiError(500, "Unexpected admin error"), request_id)

    def _route(self, method: str, path: str, body: bytes) -> Any:
        runtime = self.runtime
        known: dict[tuple[str, str], Callable[[], Any]] = {
            ("GET", "/_emulator/requests"): lambda: runtime.log,
            ("POST", "/_emulator/reset"): lambda: self._reset(_json(body, allow_empty=True)),
            ("GET", "/_emulator/config"): runtime.config.to_json,
            ("POST", "/_emulator/config"): lambda: self._configure(_json(body)),
            ("GET", "/_emulator/data"): lambda: runtime.store.data,
        }
        action = known.get((method, path))
        if action is not None:
            return action()
        match = _STATE_PATH.fullmatch(path)
        if match:
            if method != "POST":
                raise ApiError(405, f"Method {method} is not allowed on {path}")
            return self._set_state(match.group(1), match.group(2), match.group(3), _json(body))
        if any(p == path for _, p in known):
            raise ApiError(405, f"Method {method} is not allowed on {path}")
        raise ApiError(404, f"No admin route {path}")

    def _reset(self, body: Any) -> dict[str, Any]:
        if body is None:
            body = {}
        if not isinstance(body, dict) or set(body) - {"seedPipes", "services"}:
            raise ApiError(400, "reset body may only hold seedPipes and services")
        pipes, services = body.get("seedPipes"), body.get("services")
        for name, value in (("seedPipes", pipes), ("services", services)):
            bad_type = isinstance(value, bool) or not isinstance(value, int)
            if value is not None and (bad_type or value < (0 if name == "seedPipes" else 1)):
                raise ApiError(400, f"{name} must be a non-negative integer (services >= 1)")
        self.runtime.reseed(pipes, services)
        return {"seedPipes": self.runtime.seed_pipes, "services": self.runtime.seed_services}

    def _configure(self, body: Any) -> dict[str, Any]:
        try:
            self.runtime.config.update(body)
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        self.runtime.apply_config()
        return self.runtime.config.to_json()

    def _set_state(self, collection: str, ident: str, attr: str, body: Any) -> dict[str, Any]:
        store = self.runtime.store
        table, allowed, field = {
            "pipes": ("pipes", PIPE_STATES, "state"),
            "endpoints": ("reversePrivateEndpoints", ENDPOINT_STATUSES, "status"),
            "services": ("services", SERVICE_STATES, "state"),
        }[collection]
        record = store.data[table].get(ident.lower())
        if record is None:
            raise ApiError(404, f"{collection[:-1]} {ident} not found")
        if not isinstance(body, dict) or not isinstance(body.get(attr), str):
            raise ApiError(400, f'body must be {{"{attr}": "<value>"}}')
        if body[attr] not in allowed:
            raise ApiError(400, f"{attr} must be one of {', '.join(allowed)}")
        record[field] = body[attr]
        # A forced state ends any transition.
        if collection == "pipes":
            lifecycle.forget(store.data, record["id"])
        elif collection == "endpoints":
            reverse_endpoints.forget(store.data, record["id"])
        store.save()
        result: dict[str, Any] = record
        return result


def _json(body: bytes, allow_empty: bool = False) -> Any:
    if allow_empty and not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise ApiError(400, "Request body is not valid JSON") from None
