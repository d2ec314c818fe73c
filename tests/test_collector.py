"""``reconciler.model.collector``: the cyclic collector is paused while manifests load, what
is alive then (and after each large answer is decoded) is frozen out of its sight during the
plan, and everything returns as it was, also on error and around someone else's freeze."""

from __future__ import annotations

import gc
import weakref

import pytest

from reconciler.model import collector


@pytest.fixture(autouse=True)
def _collector_as_found() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_spared_should_pause_then_freeze_what_was_loaded_and_restore_everything() -> None:
    with collector.spared() as loaded:
        assert not gc.isenabled()
        manifests = [{"spec": {"n": i}} for i in range(1000)]
        loaded()
        assert gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen >= len(manifests)
        loaded()  # a second call changes nothing
        assert gc.get_freeze_count() == frozen
        answer = [[i] for i in range(1000)]  # lists are always tracked
        collector.freeze_alive()
        assert gc.get_freeze_count() >= frozen + len(answer)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_freeze_alive_should_do_nothing_outside_a_spared_block() -> None:
    collector.freeze_alive()
    assert gc.get_freeze_count() == 0
    with collector.spared():
        collector.freeze_alive()  # not loaded yet: nothing frozen, nothing owned
        assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_spared_should_leave_a_disabled_collector_disabled_and_restore_on_error() -> None:
    gc.disable()
    try:
        with pytest.raises(KeyError), collector.spared() as loaded:
            loaded()
            assert not gc.isenabled()
            raise KeyError("boom")
        assert not gc.isenabled() and gc.get_freeze_count() == 0
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_spared_should_not_touch_a_freeze_made_by_someone_else() -> None:
    gc.freeze()
    theirs = gc.get_freeze_count()
    made = [[] for _ in range(1000)]  # new tracked objects: a freeze of spared's own takes them
    try:
        with collector.spared() as loaded:
            loaded()
            collector.freeze_alive()
            # A frozen object may die meanwhile (another thread's), so the count may fall a
            # little; a freeze of spared's own would add the 1,000 lists, an unfreeze empty it.
            assert theirs - 100 < gc.get_freeze_count() <= theirs
        assert theirs - 100 < gc.get_freeze_count() <= theirs
    finally:
        gc.unfreeze()
    assert len(made) == 1000


class _Node:
    """A container in a reference cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


def _cyclic_garbage(alive: weakref.WeakSet[_Node], count: int) -> None:
    for _ in range(count):
        alive.add(_Node())


def test_spared_blocks_one_after_another_should_not_keep_the_garbage_of_earlier_ones() -> None:
    # A freeze takes uncollected garbage with it; unfrozen, it lands in the oldest generation,
    # which the collector's own passes rarely visit: a process planning every few minutes
    # (watch) kept every run's garbage for good. At most the last block's may be left.
    alive: weakref.WeakSet[_Node] = weakref.WeakSet()
    per_block = 300
    for _ in range(20):
        _cyclic_garbage(alive, per_block)  # left over from the work before this block
        with collector.spared() as loaded:
            _cyclic_garbage(alive, per_block)  # made while loading (the collector paused)
            loaded()
            _cyclic_garbage(alive, per_block)
            collector.freeze_alive()
    assert len(alive) <= 3 * per_block
