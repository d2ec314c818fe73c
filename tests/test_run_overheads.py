"""Costs a run must not pay: a size-bound buffer per manifest, a plan rendered action by action.

Both were found in profiles of a 10,000-manifest plan; these tests pin the cause, not a timing.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from reconciler.cli.terminal import run
from reconciler.load.manifestfiles import _read_bounded


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
