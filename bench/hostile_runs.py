"""Whole runs against servers that never succeed: how long ``reconcile plan manifests`` lasts.

Each misbehaviour of issue 26 item 1 gets its own loopback server, and the real CLI plans the
example manifests against it (both interfaces point at it) with the default limits unless
``--limit NAME=VALUE`` sets a ``RECONCILE_*`` variable. The table gives each run's wall time,
its exit code, how many requests reached the server, and the bound the run-level retry budget
promises (budget plus one request deadline). Nothing is asserted: these are measurements.

Run from the repository root: ``python bench/hostile_runs.py [--only 429-reset] [--cap 400]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.requests += 1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.server.behaviour(self)

    do_PATCH = do_POST = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, behaviour: Callable[[_Handler], None]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behaviour = behaviour
        self.requests = 0
        self.stopping = threading.Event()
        threading.Thread(target=self.serve_forever, daemon=True).start()


def _throttled(headers: dict[str, Callable[[], str]]) -> Callable[[_Handler], None]:
    def behave(h: _Handler) -> None:
        body = json.dumps({"status": 429, "error": "Rate limit exceeded"}).encode()
        h.send_response(429)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            h.send_header(name, value())
        h.end_headers()
        h.wfile.write(body)

    return behave


def _trickle(h: _Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "50000")
    h.end_headers()
    while not h.server.stopping.wait(1.0):
        h.wfile.write(b" ")
        h.wfile.flush()


MISBEHAVIOURS: dict[str, Callable[[_Handler], None]] = {
    "429-reset": _throttled({"X-RateLimit-Reset": lambda: f"{time.time() + 3:.0f}"}),
    "429-garbage": _throttled({"Retry-After": lambda: "-5", "X-RateLimit-Reset": lambda: "soon"}),
    "trickle": _trickle,
}


def _environment(url: str, limits: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    example = ROOT / "manifests" / ".env.example"
    for line in example.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            env.setdefault(name, value)
    env.update(
        RECONCILE_BASE_URL=url,
        RECONCILE_DASHBOARDS_URL=url,
        RECONCILE_KEY_ID="bench-key",
        RECONCILE_KEY_SECRET="bench-secret",
        RECONCILE_DASHBOARDS_TOKEN="bench-token",
    )
    env.update(limits)
    return env


def run(name: str, limits: dict[str, str], cap: float) -> dict[str, Any]:
    """Plan the example manifests against one misbehaving server; return the measurements."""
    server = _Server(MISBEHAVIOURS[name])
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "reconciler", "plan", str(ROOT / "manifests")]
        command += ["--state", str(Path(tmp) / "state.json")]
        start = time.monotonic()
        try:
            done = subprocess.run(
                command,
                env=_environment(url, limits),
                capture_output=True,
                text=True,
                timeout=cap,
                cwd=tmp,
            )
            code: int | str = done.returncode
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        except subprocess.TimeoutExpired:
            code, tail = "still running", [""]
        elapsed = time.monotonic() - start
    server.stopping.set()
    server.shutdown()
    server.server_close()
    return {
        "run": name,
        "seconds": elapsed,
        "exit": code,
        "requests": server.requests,
        "last": tail[0],
    }


def main() -> None:
    """Run the chosen misbehaviours (in parallel: each run mostly waits) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(MISBEHAVIOURS))
    parser.add_argument("--cap", type=float, default=400.0, help="Stop a run after this long.")
    parser.add_argument("--limit", action="append", default=[], help="RECONCILE_X=VALUE")
    args = parser.parse_args()
    limits = dict(item.split("=", 1) for item in args.limit)
    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda n=name: results.append(run(n, limits, args.cap)))
        for name in args.only or list(MISBEHAVIOURS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"limits: {limits or 'defaults'}; load average {os.getloadavg()[0]:.2f}")
    for r in sorted(results, key=lambda r: str(r["run"])):
        print(
            f"{r['run']:<12} {r['seconds']:7.1f} s  exit {r['exit']!s:<13} "
            f"{r['requests']:4d} requests  {r['last'][:150]}"
        )


if __name__ == "__main__":
    main()
