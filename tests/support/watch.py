"""Helpers for the watch tests: a real ``reconcile watch`` process, its endpoint, drift, chromium."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.cli import SECRET_ENV, run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE

REPO = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"watch: listening on (http://[^\s\"]+)")


class WatchProcess:
    """``python -m reconciler watch ARGS`` in a directory; its log lines are kept."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "reconciler", "watch", *args, "--listen", "127.0.0.1:0"],
            cwd=cwd,
            env={**os.environ, **SECRET_ENV, **env, "NO_COLOR": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = ""

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line)
        self._queue.put(None)

    def wait_for_line(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """Wait for a log line matching ``pattern`` (searching the lines seen so far first)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for line in self.lines[seen:]:
                found = regex.search(line)
                if found:
                    return found
            seen = len(self.lines)
            if self.process.poll() is not None and seen == len(self.lines):
                time.sleep(0.2)
                if seen == len(self.lines):
                    break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r}; log:\n" + "\n".join(self.lines))

    def start(self) -> WatchProcess:
        """Wait until the endpoint listens."""
        self.url = self.wait_for_line(_LISTENING.pattern).group(1)
        return self

    def get(self, path: str) -> httpx.Response:
        """GET a path of the endpoint."""
        return httpx.get(self.url + path, timeout=10)

    def status(self) -> dict[str, Any]:
        """The ``/api/status`` document."""
        document: dict[str, Any] = self.get("/api/status").json()
        return document

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM, then wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL (no clean-up at all)."""
        self.process.kill()
        self.process.wait()


def project(tmp_path: Path, name: str = "project") -> Path:
    """A copy of the example manifests in a directory of its own."""
    directory = tmp_path / name
    shutil.copytree(EXAMPLES, directory / "manifests")
    return directory


def until(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def pipe_path(emulator: Emulator, pipe_id: str = KAFKA_PIPE, service: str = ANALYTICS) -> str:
    """The API path of a pipe."""
    return f"/v1/organizations/{emulator.org_id}/services/{service}/pipes/{pipe_id}"


def drift_orders(emulator: Emulator, wait_ms: int = 5000) -> None:
    """Change the ``orders`` pipe through the API, as a console user would."""
    response = httpx.patch(
        emulator.url + pipe_path(emulator),
        json={"settings": {"streaming_max_insert_wait_ms": wait_ms}},
        auth=(emulator.key_id, emulator.key_secret),
        timeout=10,
    )
    response.raise_for_status()


def orders_wait_ms(emulator: Emulator) -> int:
    """The live ``streaming_max_insert_wait_ms`` of the orders pipe."""
    response = httpx.get(
        emulator.url + pipe_path(emulator), auth=(emulator.key_id, emulator.key_secret), timeout=10
    )
    response.raise_for_status()
    return int(response.json()["result"]["settings"]["streaming_max_insert_wait_ms"])


def chromium() -> str:
    """The headless browser (``make test`` installs Debian's chromium when missing)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is missing: run tools/ensure-chromium (make test does)"
    return found


def rendered_table(url: str, table_id: str) -> list[list[str]]:
    """Open ``url`` in headless chromium and read back the rows of ``<table id=table_id>``."""
    from html.parser import HTMLParser

    # Chromium's helper processes may still write to the profile as it is removed.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        dom = subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",  # tests may run as root, where chromium's sandbox refuses
                "--disable-gpu",
                f"--user-data-dir={profile}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.inside = False
            self.cell: list[str] | None = None

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "table":
                self.inside = dict(attrs).get("id") == table_id
            elif self.inside and tag == "tr":
                self.rows.append([])
            elif self.inside and tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag: str) -> None:
            if tag == "table":
                self.inside = False
            elif self.inside and tag in ("td", "th") and self.cell is not None:
                self.rows[-1].append("".join(self.cell).strip())
                self.cell = None

        def handle_data(self, data: str) -> None:
            if self.cell is not None:
                self.cell.append(data)

    parser = Rows()
    parser.feed(dom)
    assert parser.rows, f"no table {table_id!r} in the page chromium rendered:\n{dom[:2000]}"
    return parser.rows


# Watch options that make a cycle quick: no client budget (no watch test is about pacing), no
# jitter, a one-second interval.
WATCH_FAST = ("--rate", "none", "--jitter", "0", "--interval", "1s")


def applied_project(emulator: Emulator, tmp_path: Path) -> tuple[Path, str]:
    """Copy the example project under ``tmp_path`` and apply it; return it and its state path."""
    directory = project(tmp_path)
    state = str(directory / "state.json")
    result = run_cli(
        [
            "apply",
            str(directory / "manifests"),
            "--state",
            state,
            "--auto-approve",
            "--rate",
            "none",
        ],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    return directory, state


def watching_applied_project(
    emulator: Emulator, tmp_path: Path, *more: str
) -> tuple[WatchProcess, Path, str]:
    """Apply the example project, then start a fast detect-mode watch of it (``more`` flags
    added); return the started watch, the project and its state path."""
    directory, state = applied_project(emulator, tmp_path)
    args = ["manifests", "--state", state, *WATCH_FAST, *more]
    return WatchProcess(args, directory, emulator.env()).start(), directory, state


def correcting_watch(emulator: Emulator, tmp_path: Path, *extra: str) -> WatchProcess:
    """Start a correct-mode watch on the applied example project (``extra``: more options)."""
    directory, state = applied_project(emulator, tmp_path)
    args = ["manifests", "--state", state, *WATCH_FAST, "--mode", "correct", *extra]
    return WatchProcess(args, directory, emulator.env()).start()


def sigterm_once_a_patch_is_in_flight(
    watch: WatchProcess, emulator: Emulator, since: int, timeout: float
) -> None:
    """SIGTERM the watch once a PATCH logged after request ``since`` is in flight; it exits 0."""

    def patch_in_flight() -> bool:
        log = emulator.requests()[since:]
        return any(r["method"] == "PATCH" and r["status"] is None for r in log)

    until(patch_in_flight, timeout=timeout, what="a correcting PATCH in flight")
    watch.process.send_signal(signal.SIGTERM)
    assert watch.process.wait(timeout=30) == 0
