"""The API client wired to an in-process emulator through ``httpx.ASGITransport`` (no sockets).

``in_process(...)`` builds a fresh emulator app (seeded, demo credentials) and a ``Client``
whose both interfaces go through an ASGI transport on that app, so unit tests of the client,
the fetcher, the applier and the planning engine run against the real server code in the same
event loop, without a port.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from reconciler.client.api import ApiConfig, Client
from reconciler.client.ratelimit import Rate
from reconciler.emulator import EmulatorApp, EmulatorConfig, Identities, create_app

BASE = "http://127.0.0.1"
NO_LIMIT = Rate.parse("none")


def emulator_app(**config: object) -> EmulatorApp:
    """A fresh seeded emulator app; ``config`` are ``EmulatorConfig`` fields (e.g. ``spec_only``)."""
    settings = EmulatorConfig(**config)  # type: ignore[arg-type]
    return create_app(config=settings, identities=Identities.from_env({}))


def config(**overrides: object) -> ApiConfig:
    """A client configuration for the demo credentials, without a request budget."""
    values: dict[str, object] = {
        "base_url": BASE,
        "key_id": "demo-key-id",
        "key_secret": "demo-key-secret",
        "dashboards_url": BASE,
        "dashboards_token": "demo-dashboards-token",
        "rate": NO_LIMIT,
        "dashboards_rate": NO_LIMIT,
        "max_attempts": 2,
        "max_backoff": 0.01,
    }
    values.update(overrides)
    return ApiConfig(**values)  # type: ignore[arg-type]


@asynccontextmanager
async def in_process(
    app: EmulatorApp | None = None, **overrides: object
) -> AsyncIterator[tuple[Client, EmulatorApp]]:
    """Yield a ``Client`` talking to ``app`` (a fresh one by default) in-process."""
    app = app or emulator_app()
    transport = httpx.ASGITransport(app=app)
    async with Client(config(**overrides), transport=transport) as client:
        yield client, app


# What a rewrite returns to leave an answer as the emulator gave it.
KEEP = object()


class RewritingTransport(httpx.AsyncBaseTransport):
    """Hands every request to the emulator app; ``rewrite(request, body)`` may replace the
    decoded body of an answer (``KEEP`` leaves it), the way a proxy that rewrites answers does.
    ``after(request, response)`` may replace the app's answer (``None``: it stands), e.g. with
    a 500 for a create the app made."""

    def __init__(
        self,
        app: EmulatorApp,
        rewrite: Callable[[httpx.Request, Any], Any] = lambda request, body: KEEP,
        *,
        after: Callable[[httpx.Request, httpx.Response], httpx.Response | None] | None = None,
    ) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.rewrite = rewrite
        self.after = after

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        if self.after is not None:
            replaced = self.after(request, response)
            if replaced is not None:
                return replaced
        try:
            body = json.loads(content)
        except ValueError:
            return httpx.Response(response.status_code, headers=response.headers, content=content)
        new = self.rewrite(request, body)
        if new is KEEP:
            return httpx.Response(response.status_code, headers=response.headers, content=content)
        data = json.dumps(new).encode()
        return httpx.Response(
            response.status_code, headers={"Content-Type": "application/json"}, content=data
        )
