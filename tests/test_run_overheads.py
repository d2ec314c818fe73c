"""Costs a run must not pay: rendering its result, a size-bound buffer per manifest, tearing the heap down.

Both were found in profiles of a 10,000-manifest plan (about 0.3 s each); these tests pin the
cause, not a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from reconciler.cli.common import run
from reconciler.load.manifests import _read_bounded


class _CountsRepr:
    """A result that counts how often it is rendered."""

    calls = 0

    def __repr__(self) -> str:
        type(self).calls += 1
        return "CountsRepr()"


def test_running_a_command_should_never_render_its_result() -> None:
    # asyncio's runner checks its SIGINT handler with signal.getsignal, whose enum lookup
    # builds repr() of the handler: a partial holding the finished task, hence its result —
    # the whole plan, 0.3 s for 10,000 pipes.
    async def command() -> _CountsRepr:
        return _CountsRepr()

    _CountsRepr.calls = 0
    result = run(command())
    assert isinstance(result, _CountsRepr)
    assert _CountsRepr.calls == 0


def test_running_a_command_should_still_raise_its_error() -> None:
    async def command() -> None:
        raise LookupError("boom")

    with pytest.raises(LookupError, match="boom"):
        run(command())


def test_reading_a_small_manifest_should_not_allocate_the_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_bytes(b"kind: Pipe\n" * 10)
    tracemalloc.start()
    try:
        data = _read_bounded(path, 64 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data == b"kind: Pipe\n" * 10
    assert peak < 1 << 20


@pytest.mark.parametrize(
    ("size", "bound", "whole"),
    [(0, 10, True), (10, 10, True), (11, 10, False), (5000, 4096, False), (4096, 4096, True)],
)
def test_reading_a_manifest_should_return_it_whole_or_refuse_it_at_the_bound(
    tmp_path: Path, size: int, bound: int, whole: bool
) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"x" * size)
    if whole:
        assert _read_bounded(path, bound) == b"x" * size
    else:
        with pytest.raises(Exception, match="more than the limit"):
            _read_bounded(path, bound)


def test_a_plan_should_render_as_counts_not_as_every_action() -> None:
    from reconciler.model.resources import Location
    from reconciler.plan.actions import Action, Op, Plan

    actions = tuple(
        Action("Pipe", f"p{i}", Op.NOOP, Location("m.yaml", i + 1)) for i in range(5000)
    )
    plan = Plan((*actions, Action("Pipe", "new", Op.CREATE, Location("n.yaml", 1))))
    assert repr(plan) == "Plan(5001 actions: create=1, unchanged=5000)"


def _entry(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (which ends by calling ``reconciler.cli.entry``) in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=60,
        check=False,
    )


def test_the_quick_exit_should_still_run_exit_handlers_and_flush_output(tmp_path: Path) -> None:
    script = (
        "import atexit, sys\n"
        "from reconciler.cli import entry\n"
        "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
        "print('x' * 300000, end='')\n"
        "entry()\n"
    )
    done = _entry(tmp_path, script, "--version")
    assert done.returncode == 0
    assert done.stdout.startswith("x" * 300000) and "reconcile" in done.stdout[300000:]
    assert "exit handler ran" in done.stderr


@pytest.mark.parametrize(
    ("args", "code"), [(["validate", "missing-dir"], 1), (["plan", "--nope"], 1), (["--help"], 0)]
)
def test_the_quick_exit_should_keep_each_exit_code(
    tmp_path: Path, args: list[str], code: int
) -> None:
    done = _entry(tmp_path, "from reconciler.cli import entry\nentry()\n", *args)
    assert done.returncode == code, done.stderr
