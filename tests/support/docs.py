"""Helpers for the tests of the README and the documentation site (docs/, mkdocs.yml).

Pages whose code blocks are executed mark every fenced block with the HTML comment on the line
before it (invisible once rendered):

* ``<!-- run -->`` — a ``sh`` block is run by bash, a ``python`` block by the interpreter; the
  blocks of a page run in order, in one shell, so ``cd``, ``export`` and background jobs carry
  over;
* ``<!-- write: PATH -->`` — the block's text is written to PATH (relative to the shell's
  current directory at that point);
* ``<!-- output -->`` — what the run block before it prints: each line must appear in its
  output (whitespace-normalized; ``…`` matches anything);
* ``<!-- not run: REASON -->`` — left out, saying why.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import SECRET_ENV

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
_FENCE = re.compile(
    r"(?:<!-- (?P<mark>[^>]*?) -->\n)?^```(?P<lang>\w*)\n(?P<text>.*?)^```", re.M | re.S
)
_MARKER = "@@reconcile-docs-block "


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page, with its mark."""

    mark: str  # "run", "write: PATH", "output", "not run: REASON", or "" (unmarked)
    lang: str
    text: str
    line: int


def page_text(name: str) -> str:
    """The Markdown of ``README.md`` or of a page under docs/ (``concepts/state.md``)."""
    path = REPO / name if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def all_pages() -> dict[str, str]:
    """The README and every Markdown page under docs/, by name."""
    pages = {"README.md": page_text("README.md")}
    for path in sorted(DOCS.rglob("*.md")):
        pages[path.relative_to(DOCS).as_posix()] = path.read_text(encoding="utf-8")
    return pages


def blocks(text: str) -> list[Block]:
    """Every fenced block of a page (blocks nested in list items are indented: not matched)."""
    return [
        Block(
            (m.group("mark") or "").strip(),
            m.group("lang"),
            m.group("text"),
            text.count("\n", 0, m.start("lang")) + 1,
        )
        for m in _FENCE.finditer(text)
    ]


def fenced_lines(text: str) -> int:
    """How many fences (opening or closing, at any indentation) a page has."""
    return len(re.findall(r"^\s*```", text, re.M))


def script(page: list[Block]) -> str:
    """One bash script running a page's run and write blocks in order, each announced."""
    parts = ["set -eo pipefail"]
    for index, block in enumerate(page):
        if block.mark.startswith("write: "):
            target = block.mark.removeprefix("write: ").strip()
            parts.append(f"mkdir -p {shlex.quote(os.path.dirname(target) or '.')}")
            parts.append(
                f"cat > {shlex.quote(target)} <<'RECONCILE_DOCS_EOF'\n{block.text}RECONCILE_DOCS_EOF"
            )
        elif block.mark == "run":
            parts.append(f"echo '{_MARKER}{index}'")
            if block.lang == "python":
                parts.append(f"python - <<'RECONCILE_DOCS_EOF'\n{block.text}RECONCILE_DOCS_EOF")
            else:
                parts.append(block.text)
    parts.append(f"echo '{_MARKER}end'")
    return "\n".join(parts) + "\n"


def run_page(page: list[Block], cwd: Path, env: dict[str, str]) -> tuple[int, dict[int, str], str]:
    """Run a page's blocks in one bash; return its status, each run block's output, stderr.

    The shell runs in its own process group, killed at the end, so a background job a page
    starts (the emulator) never outlives the test.
    """
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in SECRET_ENV and not k.startswith("RECONCILE_")
    }
    process = subprocess.Popen(
        ["bash", "-c", script(page)],
        cwd=cwd,
        env={**base, **env, "PATH": path, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    outputs: dict[int, str] = {}
    current: int | None = None
    for line in stdout.splitlines(keepends=True):
        if line.startswith(_MARKER):
            tag = line.removeprefix(_MARKER).strip()
            current = None if tag == "end" else int(tag)
            if current is not None:
                outputs[current] = ""
        elif current is not None:
            outputs[current] += line
    return process.returncode, outputs, stderr


def missing_lines(expected: str, actual: str) -> list[str]:
    """The lines of an output block that the actual output lacks (``…`` matches anything)."""
    have = [" ".join(line.split()) for line in actual.splitlines()]
    missing = []
    for line in expected.splitlines():
        want = " ".join(line.split())
        if not want:
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("…")))
        if not any(pattern.search(h) for h in have):
            missing.append(line)
    return missing


def build_site(out: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the repository's site into ``out``."""
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


class Browser:
    """Headless chromium driven over the DevTools protocol on a pipe (fds 3 and 4 of the child).

    ``--dump-dom`` cannot wait for a web worker (the site's search runs in one), so pages are
    opened and then asked, with ``evaluate``, until what they render is there.
    """

    def __init__(self) -> None:
        import tempfile

        from tests.support.watch import chromium

        # Chromium's helper processes may still write to the profile as it is removed.
        self._profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        to_child, self._to_browser = os.pipe()
        self._from_browser, from_child = os.pipe()
        # High copies first, so the child's dup2 onto 3 and 4 never overwrites one of them.
        high = [os.dup2(fd, 100 + i) for i, fd in enumerate((to_child, from_child))]

        def wire() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self._process = subprocess.Popen(
            [
                chromium(),
                "--headless",
                "--no-sandbox",  # tests may run as root, where chromium's sandbox refuses
                "--disable-gpu",
                "--window-size=1280,900",
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(3, 4, *high),
            preexec_fn=wire,
            start_new_session=True,  # its own process group: close() ends its helpers too
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_child, from_child, *high):
            os.close(fd)
        self._buffer = b""
        self._next = 0
        self._session = ""

    def _call(self, method: str, **params: object) -> dict[str, Any]:
        import json

        self._next += 1
        message: dict[str, object] = {"id": self._next, "method": method, "params": params}
        if self._session and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._from_browser, 1 << 16)
                assert chunk, "chromium closed its DevTools pipe"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                return dict(answer.get("result", {}))

    def open(self, url: str) -> None:
        """Open ``url`` in a new tab and talk to it from now on."""
        target = self._call("Target.createTarget", url=url)["targetId"]
        self._session = self._call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the open page."""
        result = self._call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        """Evaluate ``expression`` until it is truthy; return that value."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    def screenshot(self, path: Path) -> None:
        """Save what the open page shows as a PNG."""
        import base64

        data = self._call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """End chromium."""
        import signal
        import time

        group = self._process.pid
        os.killpg(group, signal.SIGTERM)
        self._process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # its helpers leave after it: wait for them
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()
