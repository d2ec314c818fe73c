"""Continuous reconcile: ``reconcile watch`` as a Python API.

Build a ``Watcher`` from a ``load`` callable (returning a ``Target``: the client configuration,
the scope and the plan options, read again each cycle), a ``Lease`` (the state backend's:
``open_backend(address, workspace).lease(holder, seconds)``) and ``WatchOptions``, then
``await run_watch(watcher, "127.0.0.1:9464")``: cycles plan (and, in ``Mode.CORRECT``, apply)
while this replica holds the lease, and the HTTP endpoint serves ``/healthz``, ``/readyz``,
``/metrics``, ``/`` and ``/api/status`` from ``watcher.status``. ``watcher.stop()`` ends it
cleanly (what SIGTERM does). The command line is a thin layer over exactly this.
"""

from reconciler.watch.loop import Mode, Target, Watcher, WatchOptions
from reconciler.watch.run import DEFAULT_LISTEN, parse_listen, run_watch
from reconciler.watch.status import Cycle, CycleResult, WatchStatus

__all__ = [
    "DEFAULT_LISTEN",
    "Cycle",
    "CycleResult",
    "Mode",
    "Target",
    "WatchOptions",
    "WatchStatus",
    "Watcher",
    "parse_listen",
    "run_watch",
]
