"""The API client wired to an in-process emulator through ``httpx.ASGITransport`` (no sockets).

``in_process(...)`` builds a fresh emulator app (seeded, demo credentials) and a ``Client``
whose both interfaces go through an ASGI transport on that app, so unit tests of the client,
the fetcher, the applier and the planning engine run against the real server code in the same
event loop, without a port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from reconciler.client.api import ApiConfig, Client
from reconciler.client.budget import Rate
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
