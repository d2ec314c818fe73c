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

from tests.cli_helpers import SECRET_ENV

REPO = Path(__file__).resolve().parent.parent
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
