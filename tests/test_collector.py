"""``reconciler.model.collector``: the cyclic collector is paused while manifests load, what
is alive then (and after each large answer is decoded) is frozen out of its sight during the
plan, and everything returns as it was, also on error and around someone else's freeze."""

from __future__ import annotations

import gc

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
    try:
        with collector.spared() as loaded:
            loaded()
            collector.freeze_alive()
            assert gc.get_freeze_count() == theirs
        assert gc.get_freeze_count() == theirs
    finally:
        gc.unfreeze()
