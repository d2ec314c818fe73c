"""``run_watch``: the watch loop and its HTTP endpoint in one process and one event loop.

uvicorn serves the endpoint on the loop the watcher runs on (its own signal handling is
turned off: SIGTERM and SIGINT stop the watcher, which finishes the apply in flight, saves the
state and releases the lease; then the server closes). SIGHUP asks the watcher to read the
project file again. ``on_listen`` is told the address actually bound (``--listen HOST:0``
picks a free port).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Generator

import uvicorn

from reconciler.model.errors import ConfigError
from reconciler.watch.loop import Watcher, refuse_if_held
from reconciler.watch.server import build_app

__all__ = ["parse_listen", "run_watch"]


DEFAULT_LISTEN = "127.0.0.1:9464"


def parse_listen(text: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6); raise ``ConfigError`` when malformed."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--listen {text!r}: give HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host, int(port)


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the watcher owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def run_watch(
    watcher: Watcher,
    listen: str = DEFAULT_LISTEN,
    *,
    metrics: Callable[[], bytes] | None = None,
    on_start: Callable[[], None] | None = None,
    on_listen: Callable[[str], None] | None = None,
    signals: bool = True,
) -> None:
    """Serve the endpoint and run the loop until SIGTERM/SIGINT (or ``watcher.stop()``).

    ``on_start`` is called once the watch is sure to run (the address bound, a local state's
    lease not held by another watch), before ``on_listen``: a watch that refuses to start
    announces nothing.
    """
    host, port = parse_listen(listen)
    # Bound here, before anything else: a taken port is a plain error, not a server's log line.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(
            f"--listen {listen}: cannot listen there ({exc.strerror or exc})"
        ) from None
    try:
        await refuse_if_held(watcher.lease)
        if on_start is not None:
            on_start()
        app = build_app(watcher.status, metrics or watcher.metrics.render)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        server = _Server(config)
        if signals:
            watcher.handle_signals()
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if serving.done():
                    serving.result()
                    raise ConfigError(f"--listen {listen}: the HTTP endpoint could not start")
                await asyncio.sleep(0.02)
            if on_listen is not None:
                bound = sock.getsockname()
                shown = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
                on_listen(f"http://{shown}:{bound[1]}")
            await watcher.run()
        finally:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await serving
            watcher.release_signals()
    finally:
        sock.close()
        # watcher.run releases the lease; this covers a start that failed before it ran.
        await asyncio.to_thread(watcher.lease.release)
