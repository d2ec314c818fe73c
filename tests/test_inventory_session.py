"""The read-only session every inventory command reads through (``inventory.session.read_live``).

It refuses a missing or malformed organization id and an unusable client configuration before
anything is sent, then opens one client for the read and closes it; ``get``, ``export``,
``check`` and ``discover`` open no client of their own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.client.api import Client
from reconciler.inventory import reads
from reconciler.inventory.session import NO_ORGANIZATION, read_live
from reconciler.model.errors import ConfigError
from tests.support.asgi import config, emulator_app
from tests.support.seed_ids import ORG_ID

REPO = Path(__file__).resolve().parent.parent


def test_a_read_lists_the_services_through_one_client_that_is_closed_after() -> None:
    app = emulator_app()
    clients: list[Client] = []

    async def fetch(client: Client, org: str) -> Any:
        clients.append(client)
        return await reads.list_services(client, org, ())

    transport = httpx.ASGITransport(app=app)
    found = asyncio.run(read_live(config(), ORG_ID, fetch, transport=transport))
    assert found and all("name" in service for service in found)
    assert len(clients) == 1
    assert [e["method"] for e in app.runtime.log] and all(
        e["method"] == "GET" for e in app.runtime.log
    )


@pytest.mark.parametrize(
    ("organization", "message"),
    [(None, NO_ORGANIZATION), ("", NO_ORGANIZATION), ("../../x", "is not a valid UUID")],
)
def test_an_organization_that_is_missing_or_not_a_uuid_is_refused_before_any_request(
    organization: str | None, message: str
) -> None:
    app = emulator_app()

    async def fetch(client: Client, org: str) -> Any:
        raise AssertionError("nothing may be read")

    transport = httpx.ASGITransport(app=app)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        asyncio.run(read_live(config(), organization, fetch, transport=transport))
    assert app.runtime.log == []


def test_a_read_that_needs_no_organization_runs_without_one() -> None:
    async def fetch(client: Client, org: str) -> str:
        return org

    transport = httpx.ASGITransport(app=emulator_app())
    assert asyncio.run(read_live(config(), None, fetch, need_org=False, transport=transport)) == ""


def test_no_command_opens_a_client_itself() -> None:
    for path in sorted((REPO / "reconciler" / "cli").glob("*.py")):
        assert "Client(" not in path.read_text("utf-8"), path.name
