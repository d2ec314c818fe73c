"""How a ``reconcile`` process ends: through the interpreter's own exit, with its exit code.

``python -m reconciler`` is run in a fresh interpreter whose ``__main__`` first sets up what a
normal exit honours — an exit handler, an object whose finaliser writes a line, a large
unflushed write — so each test sees what a user's process would do at its end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PRELUDE = (
    "import atexit, runpy, sys\n"
    "class Finalised:\n"
    "    def __del__(self):\n"
    "        sys.stderr.write('finaliser ran\\n')\n"
    "kept = Finalised()\n"
    "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
    "print('x' * 300000, end='')\n"
    "sys.argv[0] = 'reconcile'\n"
    "runpy.run_module('reconciler', run_name='__main__', alter_sys=True)\n"
)


def _reconcile(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m reconciler ARGS`` after the prelude, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def test_the_process_should_end_through_the_interpreters_own_exit(tmp_path: Path) -> None:
    done = _reconcile(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("x" * 300000) and "reconcile" in done.stdout[300000:]
    assert "exit handler ran" in done.stderr
    assert "finaliser ran" in done.stderr  # the interpreter tore the heap down as usual


@pytest.mark.parametrize(
    ("args", "code"), [(["validate", "missing-dir"], 1), (["plan", "--nope"], 1), (["--help"], 0)]
)
def test_the_process_should_end_with_the_commands_exit_code(
    tmp_path: Path, args: list[str], code: int
) -> None:
    done = _reconcile(tmp_path, *args)
    assert done.returncode == code, done.stderr
    assert "finaliser ran" in done.stderr
