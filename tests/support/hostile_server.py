"""Hostile servers on loopback: one small HTTP server per misbehaviour, and the client set for it.

``HostileServer(behaviour)`` serves every request with ``behaviour(handler)`` (records each
request in ``seen``); ``cli_env`` and ``client_config`` point the command line or the API client
at it with small bounds; ``envelope`` is a management success body.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reconciler.client.api import ApiConfig
from reconciler.client.limits import RequestLimits
from reconciler.client.ratelimit import Rate

SECRET = "hostile-test-SECRET-1"
TOKEN = "hostile-test-TOKEN-2"
LIMITS = RequestLimits(max_wait=1.0, retry_budget=3.0, deadline=1.0, max_response_bytes=65536)

Behaviour = Callable[["Handler"], None]


class Handler(BaseHTTPRequestHandler):
    """Records each request, then lets the server's behaviour answer it."""

    server: HostileServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.seen.append({"path": self.path, "headers": dict(self.headers)})
        # The client hanging up mid-answer is what it should do with a hostile server.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.server.behaviour(self)

    do_PATCH = do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def answer(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        """Send a complete response."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)


class HostileServer(ThreadingHTTPServer):
    """A loopback HTTP server with one behaviour, in a daemon thread."""

    daemon_threads = True

    def __init__(self, behaviour: Behaviour) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.behaviour = behaviour
        self.seen: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        """Stop serving (handlers still trickling notice ``stopping``)."""
        self.stopping.set()
        self.shutdown()
        self.server_close()


def cli_env(server: HostileServer) -> dict[str, str]:
    """The command line's variables for both interfaces of ``server``, with small bounds
    (1 s per request, 2 s of retries without a success)."""
    return {
        "RECONCILE_BASE_URL": server.url,
        "RECONCILE_KEY_ID": "key",
        "RECONCILE_KEY_SECRET": SECRET,
        "RECONCILE_DASHBOARDS_TOKEN": TOKEN,
        "RECONCILE_REQUEST_DEADLINE": "1",
        "RECONCILE_RETRY_BUDGET": "2",
    }


def client_config(
    server: HostileServer,
    *,
    limits: RequestLimits = LIMITS,
    attempts: int = 6,
    rate: Rate | None = None,
) -> ApiConfig:
    """The real client's configuration for both interfaces of ``server`` (unpaced by default)."""
    return ApiConfig(
        base_url=server.url,
        key_id="key",
        key_secret=SECRET,
        dashboards_url=server.url,
        dashboards_token=TOKEN,
        rate=rate or Rate(0, 1.0),
        max_attempts=attempts,
        max_backoff=0.2,
        limits=limits,
    )


def envelope(result: Any) -> bytes:
    """A management success body."""
    return json.dumps({"status": 200, "requestId": "r-1", "result": result}).encode()
