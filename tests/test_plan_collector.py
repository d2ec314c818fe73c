"""``collector_spared``: the cyclic collector is paused while manifests load, the loaded
objects are frozen out of its sight while planning, and everything returns as it was."""

from __future__ import annotations

import gc

from reconciler.plan.compute import collector_spared


def test_collector_spared_should_pause_then_freeze_what_was_loaded_and_restore_everything() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with collector_spared() as loaded:
        assert not gc.isenabled()
        manifests = [{"spec": {"n": i}} for i in range(1000)]
        loaded()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(manifests)
        loaded()  # a second call changes nothing
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_collector_spared_should_leave_a_disabled_collector_disabled_and_restore_on_error() -> None:
    gc.disable()
    try:
        try:
            with collector_spared() as loaded:
                loaded()
                assert not gc.isenabled()
                raise KeyError("boom")
        except KeyError:
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_collector_spared_should_not_touch_a_freeze_made_by_someone_else() -> None:
    gc.freeze()
    theirs = gc.get_freeze_count()
    try:
        with collector_spared() as loaded:
            loaded()
            assert gc.get_freeze_count() == theirs
        assert gc.get_freeze_count() == theirs
    finally:
        gc.unfreeze()
