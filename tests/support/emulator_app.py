"""The emulator app in-process (no port): a client of it, its envelopes, a hand-moved clock.

``Client(app, auth=AUTH)`` sends requests through httpx's ASGI transport on a private event
loop; ``ok``/``error`` unwrap the management envelopes (asserting their shape). ``make_app(clock)``
builds a fresh seeded app whose store reads a ``Clock`` moved by hand, so state transitions
are driven without sleeping. A pytest plugin (``conftest.py`` loads it): the fixtures ``clock``,
``app`` (on that clock) and ``client`` (demo key) serve every module that does not define its own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from reconciler.emulator import EmulatorApp, EmulatorConfig, Identities, create_app
from tests.support.seed_ids import ANALYTICS, ORG_ID

AUTH = ("demo-key-id", "demo-key-secret")


ORG = f"/v1/organizations/{ORG_ID}"


def pipe_url(pipe_id: str, service_id: str = ANALYTICS) -> str:
    """The management path of a pipe."""
    return f"{ORG}/services/{service_id}/pipes/{pipe_id}"


class Client:
    """A synchronous client of an in-process app (httpx's ASGI transport on a private loop)."""

    def __init__(self, app: EmulatorApp, auth: tuple[str, str] | None = None):
        self._loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=app)
        self._http = httpx.AsyncClient(transport=transport, base_url="http://emulator", auth=auth)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send one request and wait for the answer (an explicit Authorization header wins)."""
        headers = kwargs.get("headers") or {}
        if any(k.lower() == "authorization" for k in headers):
            kwargs.setdefault("auth", None)
        return self._loop.run_until_complete(self._http.request(method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        """GET."""
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        """POST."""
        return self.request("POST", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        """PATCH."""
        return self.request("PATCH", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        """PUT."""
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        """DELETE."""
        return self.request("DELETE", url, **kwargs)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.run_until_complete(self._http.aclose())
        self._loop.close()


def ok(response: httpx.Response) -> Any:
    """The result of a management success envelope (asserting its shape)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == 200
    assert uuid.UUID(body["requestId"]).version == 4
    return body["result"]


def error(response: httpx.Response, status: int) -> str:
    """The error text of a management error envelope with ``status``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == status and set(body) == {"status", "requestId", "error"}
    message: str = body["error"]
    return message


def patch(client: Client, pipe_id: str, body: Any, service_id: str = ANALYTICS) -> httpx.Response:
    """PATCH a pipe."""
    return client.patch(pipe_url(pipe_id, service_id), json=body)


TRANSITION_MS = 300


START = datetime(2026, 1, 1, tzinfo=UTC)


COLUMNS = [{"name": "id", "type": "String"}, {"name": "amount", "type": "Float64"}]


MAPPINGS = [
    {"sourceField": "id", "destinationField": "id"},
    {"sourceField": "amount", "destinationField": "amount"},
]


DESTINATION = {"database": "sales", "table": "orders", "managedTable": True, "columns": COLUMNS}


SOURCES: dict[str, dict[str, Any]] = {
    "kafka": {
        "type": "confluent",
        "format": "JSONEachRow",
        "brokers": "broker-1:9092",
        "topics": "orders",
        "authentication": "SCRAM-SHA-512",
        "credentials": {"username": "u", "password": "kafka-secret"},
    },
    "objectStorage": {
        "type": "s3",
        "format": "CSVWithNames",
        "url": "https://bucket.s3.amazonaws.com/data/*.csv",
        "authentication": "IAM_USER",
        "accessKey": {"accessKeyId": "AKIA", "secretKey": "s3-secret"},
    },
    "kinesis": {
        "format": "JSONEachRow",
        "streamName": "clicks",
        "region": "us-east-1",
        "iamRole": "arn:aws:iam::123456789012:role/pipe",
    },
    "postgres": {
        "type": "postgres",
        "host": "db.example.com",
        "port": 5432,
        "database": "crm",
        "credentials": {"username": "u", "password": "pg-secret"},
        "tableMappings": [
            {"sourceSchemaName": "public", "sourceTable": "customers", "targetTable": "customers"}
        ],
    },
}


class Clock:
    """The store's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, ms: int) -> None:
        """Move the clock forward."""
        self.now += timedelta(milliseconds=ms)


@pytest.fixture
def clock() -> Clock:
    """A hand-moved clock."""
    return Clock()


def make_app(clock: Clock, **config: Any) -> EmulatorApp:
    """A fresh emulator whose store reads ``clock``."""
    app = create_app(
        config=EmulatorConfig(transition_ms=TRANSITION_MS, **config),
        identities=Identities.from_env({}),
    )
    app.runtime.store.clock = clock
    return app


@pytest.fixture
def app(clock: Clock) -> EmulatorApp:
    """A fresh in-process emulator on the hand-moved clock."""
    return make_app(clock)


@pytest.fixture
def client(app: EmulatorApp) -> Iterator[Client]:
    """A demo-key client of the app."""
    with Client(app, auth=AUTH) as test_client:
        yield test_client
