"""Start-up: bind the socket, announce the endpoints, serve with uvicorn until a signal.

The socket is bound *before* the start-up lines are printed, so a test that parses them can
connect at once (the kernel queues the connection until uvicorn accepts it); port 0 therefore
reports the real port. Uvicorn's own logging is kept at warning level with no access log: the
request log lives at ``/_emulator/requests``. The HTTP protocol is uvicorn's h11 protocol with
one addition — each request's scope carries ``emulator.abort``, which cuts the connection
without a response, so an injected "dropped connection" is a real one on the wire.
"""

from __future__ import annotations

import shlex
import socket
import sys
from typing import Any, TextIO

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from reconciler.emulator.pipeline import EmulatorApp
from reconciler.emulator.protocol import DEMO_KEY_SECRET, DEMO_TOKEN

__all__ = ["serve"]


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
    """The two lines announcing both interfaces (tests parse them: keep the format).

    A secret the operator set in the environment is never echoed: its place shows the
    variable's name instead (``$RECONCILE_KEY_SECRET``); the demo defaults are shown.
    """
    demo = app.runtime.identities.demo
    secret, token = _shown_secrets(app)
    return [
        f"management API: {_url(host, port)}  organization={demo.organization_id}  "
        f"Basic {demo.key_id}:{secret}",
        f"dashboards API: {_url(host, port)}  Bearer {token}",
    ]


def export_lines(app: EmulatorApp, host: str, port: int) -> list[str]:
    """Ready-to-paste ``export`` lines for a POSIX shell, after the two start-up lines."""
    demo = app.runtime.identities.demo
    url = _url(host, port)
    values = {
        "RECONCILE_BASE_URL": url,
        "RECONCILE_DASHBOARDS_URL": url,
        "RECONCILE_ORGANIZATION_ID": demo.organization_id,
        "RECONCILE_KEY_ID": demo.key_id,
        "RECONCILE_KEY_SECRET": demo.key_secret if demo.key_secret == DEMO_KEY_SECRET else None,
        "RECONCILE_DASHBOARDS_TOKEN": demo.token if demo.token == DEMO_TOKEN else None,
    }
    lines = ["# to use this emulator, paste into your shell:"]
    for name, value in values.items():
        if value is None:
            lines.append(f"# {name} is already set in this environment (not shown)")
        else:
            lines.append(f"export {name}={shlex.quote(value)}")
    return lines


def _shown_secrets(app: EmulatorApp) -> tuple[str, str]:
    demo = app.runtime.identities.demo
    secret = demo.key_secret if demo.key_secret == DEMO_KEY_SECRET else "$RECONCILE_KEY_SECRET"
    token = demo.token if demo.token == DEMO_TOKEN else "$RECONCILE_DASHBOARDS_TOKEN"
    return secret, token


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    app: EmulatorApp, host: str = "127.0.0.1", port: int = 0, *, print_env: bool = False
) -> None:
    """Bind, print the start-up and export lines, and serve until SIGINT/SIGTERM.

    With ``print_env`` stdout holds only the export lines (a file a shell can source) and the
    two start-up lines go to stderr.
    """
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    announce: TextIO = sys.stderr if print_env else sys.stdout
    for line in startup_lines(app, host, bound_port):
        announce.write(line + "\n")
    announce.flush()
    for line in export_lines(app, host, bound_port):
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
