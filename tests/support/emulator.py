"""A real emulator process on a loopback port, and its admin paths.

``start_emulator(...)`` runs ``reconcile emulator --port 0`` and parses its two start-up lines
into an ``Emulator`` handle (base URL, demo credentials, admin helpers: reset, configure, the
request log, forced states); ``stop_emulator`` ends it. ``DEFAULT_CONFIG`` is the configuration
the per-test ``emulator`` fixture restores.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.support.dist import REPO

__all__ = ["DEFAULT_CONFIG", "Emulator", "start_emulator", "stop_emulator", "stop_process"]

_MANAGEMENT_LINE = re.compile(
    r"^management API: (?P<url>http://\S+)  organization=(?P<org>\S+)  "
    r"Basic (?P<key_id>[^:\s]+):(?P<secret>\S+)$"
)
_DASHBOARDS_LINE = re.compile(r"^dashboards API: (?P<url>http://\S+)  Bearer (?P<token>\S+)$")
DEFAULT_CONFIG = {
    "specOnly": False,
    "latencyMs": 0,
    "faultRate": 0.0,
    "faultSeed": 0,
    "rateLimit": None,
    "transitionMs": 300,
}


class Emulator:
    """A running emulator: its base URL, demo credentials and admin helpers."""

    def __init__(self, url: str, org_id: str, key_id: str, key_secret: str, token: str):
        self.url = url
        self.org_id = org_id
        self.key_id = key_id
        self.key_secret = key_secret
        self.token = token
        self.process: subprocess.Popen[str] | None = None
        self.startup_lines: list[str] = []
        self._http = httpx.Client(base_url=url, auth=(key_id, key_secret), timeout=30)

    def env(self) -> dict[str, str]:
        """The variables the reconcile client reads to talk to this emulator."""
        return {
            "RECONCILE_BASE_URL": self.url,
            "RECONCILE_DASHBOARDS_URL": self.url,
            "RECONCILE_KEY_ID": self.key_id,
            "RECONCILE_KEY_SECRET": self.key_secret,
            "RECONCILE_DASHBOARDS_TOKEN": self.token,
            "RECONCILE_ORGANIZATION_ID": self.org_id,
        }

    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        response = self._http.request(method, path, json=body)
        response.raise_for_status()
        return response.json()["result"]

    def requests(self) -> list[dict[str, Any]]:
        """The API request log (admin requests excluded)."""
        result: list[dict[str, Any]] = self._admin("GET", "/_emulator/requests")
        return result

    def reset(self, **seed: int) -> None:
        """Restore the seed and clear the log; ``seedPipes=N, services=S`` reseed at scale."""
        self._admin("POST", "/_emulator/reset", seed or None)

    def configure(self, **cfg: Any) -> dict[str, Any]:
        """Change behaviour at runtime (specOnly, latencyMs, faultRate, faultSeed, rateLimit)."""
        result: dict[str, Any] = self._admin("POST", "/_emulator/config", cfg)
        return result

    def set_pipe_state(self, pipe_id: str, state: str) -> None:
        """Force a pipe's state (e.g. ``Paused``), which the API itself cannot change."""
        self._admin("POST", f"/_emulator/pipes/{pipe_id}/state", {"state": state})

    def set_endpoint_status(self, endpoint_id: str, status: str) -> None:
        """Force a reverse private endpoint's status (e.g. ``Ready``)."""
        self._admin("POST", f"/_emulator/endpoints/{endpoint_id}/status", {"status": status})

    def set_service_state(self, service_id: str, state: str) -> None:
        """Force a service's state (e.g. ``idle``)."""
        self._admin("POST", f"/_emulator/services/{service_id}/state", {"state": state})

    def data(self) -> dict[str, Any]:
        """The whole store, secrets included."""
        result: dict[str, Any] = self._admin("GET", "/_emulator/data")
        return result

    def close(self) -> None:
        """Close the admin HTTP client."""
        self._http.close()


def start_emulator(
    *args: str,
    timeout: float = 10.0,
    env: dict[str, str] | None = None,
    program: Sequence[str] = (sys.executable, "-m", "reconciler"),
    cwd: Path = REPO,
) -> Emulator:
    """Start ``reconcile emulator --port 0 ARGS`` and wait for its start-up lines.

    ``program`` is how ``reconcile`` is run (default: this checkout's package, by the running
    interpreter); an installed release passes its own ``reconcile`` script.
    """
    # Open for the server's whole life (it is read only if start-up fails), so no `with`.
    stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
    process = subprocess.Popen(
        [*program, "emulator", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        # Keep draining stdout for the server's whole life so that it can never block on it.
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    try:
        while len(seen) < 2:
            line = lines.get(timeout=timeout)
            if line is None:
                break
            seen.append(line)
    except queue.Empty:
        pass
    management = _MANAGEMENT_LINE.match(seen[0]) if seen else None
    dashboards = _DASHBOARDS_LINE.match(seen[1]) if len(seen) > 1 else None
    if management is None or dashboards is None:
        process.kill()
        process.wait()
        stderr.seek(0)
        raise RuntimeError(f"emulator did not start: stdout={seen!r} stderr={stderr.read()!r}")
    # A secret set in the environment is shown as "$NAME" (never echoed): take it from there.
    given = {**os.environ, **(env or {})}
    secret, token = management["secret"], dashboards["token"]
    emulator = Emulator(
        management["url"],
        management["org"],
        management["key_id"],
        given.get(secret[1:], secret) if secret.startswith("$") else secret,
        given.get(token[1:], token) if token.startswith("$") else token,
    )
    emulator.process = process
    emulator.startup_lines = seen
    return emulator


def stop_emulator(emulator: Emulator) -> None:
    """Terminate the emulator process (kill it if it does not stop within 5 s)."""
    emulator.close()
    if emulator.process is not None:
        stop_process(emulator.process)


def stop_process(process: subprocess.Popen[Any]) -> None:
    """Terminate a server process the suite started (kill it if it does not stop within 5 s)."""
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
