"""The cyclic garbage collector kept off data that is alive for a whole plan.

A plan of 10,000 pipes holds a few hundred thousand containers from the manifests until it
ends, and each large pipe list decoded from JSON another hundred thousand until its pipes are
planned. None of them form cycles (reference counting frees them), but every pass of the
cyclic collector walks them again: 0.4-0.6 s of such a plan went there. ``spared()`` pauses
the collector while manifests load, then freezes what is alive (``gc.freeze``) so later passes
skip it; ``freeze_alive()`` does the same for a large answer just decoded; everything is
unfrozen when the block ends. Objects built meanwhile are collected as usual.

A freeze cannot tell garbage from live objects: cycles not yet collected when it happens are
frozen too, and ``gc.unfreeze`` hands everything to the oldest generation, whose full pass
CPython starts only when a quarter of it is new since the last one — and unfrozen objects do
not count as new. So each block's leftover garbage stayed: a process that plans every few
minutes (``watch``, or a library caller) grew by its garbage every cycle, without end. Hence
a ``spared()`` block that follows a freeze first runs one full collection, while only what
lives between runs is alive (10–20 ms of CPU); a one-shot command, whose first block it is, pays
nothing.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

# Whether a ``spared()`` block froze objects (and so owns the freeze ``freeze_alive`` extends).
_owned = False
# Whether objects were unfrozen since the last full collection a block ran (see the module).
_unfrozen = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Pause the collector in this block (for code that builds long-lived containers)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def spared() -> Iterator[Callable[[], None]]:
    """Pause the collector until ``loaded()`` is called, then freeze what is alive; unfreeze at exit.

    Nothing is frozen if objects are frozen already (someone else's freeze is theirs to end).
    The garbage an earlier block unfroze is collected first (unless the collector is off).
    """
    global _owned, _unfrozen
    was_enabled = gc.isenabled()
    froze = False
    if _unfrozen and was_enabled and gc.get_freeze_count() == 0:
        gc.collect()
        _unfrozen = False

    def loaded() -> None:
        global _owned
        nonlocal froze
        if not froze and not _owned and gc.get_freeze_count() == 0:
            gc.freeze()
            froze = _owned = True
        if was_enabled:
            gc.enable()

    gc.disable()
    try:
        yield loaded
    finally:
        if froze:
            gc.unfreeze()
            _owned = False
            _unfrozen = True
        if was_enabled:
            gc.enable()


def freeze_alive() -> None:
    """Inside a ``spared()`` block that froze: freeze what is alive now too; else do nothing."""
    if _owned:
        gc.freeze()
