"""The request pipeline: the raw ASGI app every request enters first.

Admin requests (``/_emulator/...``) go straight to the admin handlers and are never logged;
nor is ``GET /openapi.json``, the OpenAPI description of what this emulator serves.
Every API request goes through the same steps, in the order a real gateway applies them:
rate limit on arrival (management only, per key), injected latency (``asyncio.sleep``, so
concurrent requests overlap), an injected fault, then the API itself; the outcome is appended
to the request log. A dropped connection is made real: under the emulator's uvicorn protocol
the socket is aborted without a byte of response (``scope["emulator.abort"]``); in-process
(ASGI transports used by tests) ``ConnectionDropped`` is raised out of the app instead. When
``RECONCILE_EMULATOR_CONTRACT_LOG`` names a file, every exchange is also appended to it
(``recording``), for the test suite to judge against the service's contract.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.requests import Request

from reconciler.emulator import openapi
from reconciler.emulator.admin import Admin
from reconciler.emulator.app import Api
from reconciler.emulator.faults import (
    EmulatorConfig,
    FaultInjector,
    SlidingWindowLimiter,
    reset_headers,
)
from reconciler.emulator.handlers import Call
from reconciler.emulator.protocol import ApiError, Identities, basic_pair, json_response
from reconciler.emulator.recording import Recorder
from reconciler.emulator.seed import build_seed
from reconciler.emulator.store import Store

__all__ = ["create_app"]


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class ConnectionDropped(Exception):
    """Raised out of the app, in-process, where a real server would cut the connection."""


@dataclass
class Runtime:
    """All mutable state of one emulator: store, configuration, log, limiter and faults."""

    store: Store
    config: EmulatorConfig
    identities: Identities
    seed_pipes: int = 0
    seed_services: int = 3
    log: list[dict[str, Any]] = field(default_factory=list)
    limiter: SlidingWindowLimiter | None = None
    injector: FaultInjector = field(default_factory=lambda: FaultInjector(0.0, 0))

    def __post_init__(self) -> None:
        self.apply_config()

    def apply_config(self) -> None:
        """Rebuild the limiter and the fault generator from the configuration."""
        limit = self.config.rate_limit
        self.limiter = None if limit is None else SlidingWindowLimiter(*limit)
        self.injector = FaultInjector(self.config.fault_rate, self.config.fault_seed)

    def reseed(self, seed_pipes: int | None = None, services: int | None = None) -> None:
        """Restore the seed (optionally at another scale) and clear the log."""
        if seed_pipes is not None:
            self.seed_pipes = seed_pipes
        if services is not None:
            self.seed_services = services
        self.store.data = build_seed(datetime.now(UTC), self.seed_pipes, self.seed_services)
        self.store.save()
        self.log.clear()
        self.apply_config()


def create_app(
    *,
    config: EmulatorConfig | None = None,
    identities: Identities | None = None,
    seed_pipes: int = 0,
    services: int = 3,
    data_file: Path | None = None,
) -> EmulatorApp:
    """Build the emulator's ASGI app, loading ``data_file`` when it exists."""
    if data_file is not None and data_file.exists():
        store = Store.load(data_file)
    else:
        store = Store(build_seed(datetime.now(UTC), seed_pipes, services), data_file)
        store.save()
    runtime = Runtime(
        store, config or EmulatorConfig(), identities or Identities.from_env(), seed_pipes, services
    )
    return EmulatorApp(runtime)


class EmulatorApp:
    """The ASGI entry point of both interfaces and the admin paths."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.api = Api(runtime.store, runtime.config, runtime.identities)
        self.admin = Admin(runtime)
        self.recorder = Recorder.from_env()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI: lifespan is acknowledged, HTTP requests are handled, the rest ignored."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self.recorder is not None:
            receive, send = self.recorder.wrap(scope, receive, send)
        request = Request(scope, receive)
        body = await request.body()
        if scope["path"] == "/openapi.json" and request.method == "GET":
            document = openapi.document(self.runtime.config.spec_only)
            await json_response(document)(scope, receive, send)
            return
        if scope["path"].startswith("/_emulator"):
            response = self.admin.handle(request.method, scope["path"], request.headers, body)
            await response(scope, receive, send)
            return
        await self._api_request(scope, receive, send, request, body)

    async def _api_request(
        self, scope: Scope, receive: Receive, send: Send, request: Request, body: bytes
    ) -> None:
        runtime = self.runtime
        path: str = scope["path"]
        call = Call(
            method=request.method,
            path=path,
            query=parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            ),
            headers=request.headers,
            body=body,
            request_id=str(uuid.uuid4()),
        )
        entry: dict[str, Any] = {
            "method": call.method,
            "path": path,
            "query": scope.get("query_string", b"").decode("latin-1"),
            "body": _parsed(body),
            "status": None,
            "requestId": call.request_id,
            "fault": None,
            "time": time.time(),
        }
        runtime.log.append(entry)
        dashboards = path.startswith("/api/v2")
        wait = self._rate_limited(call.headers, dashboards)
        if runtime.config.latency_ms > 0:
            await asyncio.sleep(runtime.config.latency_ms / 1000)
        if wait is not None:
            err = ApiError(429, "Rate limit exceeded", reset_headers(wait))
            response = Api.error(err, call.request_id, dashboards)
        else:
            fault = runtime.injector.decide()
            entry["fault"] = fault
            if fault == "drop":
                if runtime.injector.applied_before_drop():
                    entry["fault"] = "drop-after-apply"
                    entry["status"] = self.api.handle(call).status_code
                await _drop(scope)
                return
            if fault is not None:
                status = int(fault)
                err = ApiError(status, "Injected fault" if status == 503 else "Bad gateway")
                response = Api.error(err, call.request_id, dashboards)
            else:
                response = self.api.handle(call)
        entry["status"] = response.status_code
        await response(scope, receive, send)

    def _rate_limited(self, headers: Headers, dashboards: bool) -> float | None:
        limiter = self.runtime.limiter
        if limiter is None or dashboards:
            return None
        key_id, _ = basic_pair(headers.get("authorization"))
        return limiter.admit(key_id or "anonymous", time.monotonic())


def _parsed(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return body.decode("utf-8", "replace")


async def _drop(scope: Scope) -> None:
    abort = scope.get("emulator.abort")
    if abort is None:
        raise ConnectionDropped("injected fault: connection dropped")
    abort()
    # Let the server notice the lost connection before the app returns, so that it neither
    # writes a 500 into the dead socket nor logs "returned without starting response".
    for _ in range(3):
        await asyncio.sleep(0)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
