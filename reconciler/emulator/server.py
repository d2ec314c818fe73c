"""Start-up: bind the socket, announce the endpoints, serve with uvicorn until a signal.

The socket is bound *before* the start-up lines are printed, so a test that parses them can
connect at once (the kernel queues the connection until uvicorn accepts it); port 0 therefore
reports the real port. Uvicorn's own logging is kept at warning level with no access log: the
request log lives at ``/_emulator/requests``. The HTTP protocol is uvicorn's h11 protocol with
one addition — each request's scope carries ``emulator.abort``, which cuts the connection
without a response, so an injected "dropped connection" is a real one on the wire.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from reconciler.emulator.pipeline import EmulatorApp


class DroppingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, exposing an abort callable to the app for dropped connections."""

    def handle_events(self) -> None:
        """Parse events as usual, then hand the current request's scope the abort callable."""
        super().handle_events()
        # The request task is created but has not run yet, so it sees this key.
        scope = getattr(self, "scope", None)
        if scope is not None and self.transport is not None:
            scope["emulator.abort"] = self.transport.abort


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections; without
    # it every response on a kept-alive connection waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def startup_lines(app: EmulatorApp, host: str, port: int) -> list[str]:
    """The two lines announcing both interfaces (tests parse them: keep the format)."""
    demo = app.runtime.identities.demo
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}"
    return [
        f"management API: {url}  organization={demo.organization_id}  "
        f"Basic {demo.key_id}:{demo.key_secret}",
        f"dashboards API: {url}  Bearer {demo.token}",
    ]


def serve(app: EmulatorApp, host: str = "127.0.0.1", port: int = 0) -> None:
    """Bind, print the start-up lines, and serve until SIGINT/SIGTERM."""
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    for line in startup_lines(app, host, bound_port):
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    options: dict[str, Any] = {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "http": DroppingH11Protocol,
        "timeout_graceful_shutdown": 2,
    }
    config = uvicorn.Config(app, **options)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
