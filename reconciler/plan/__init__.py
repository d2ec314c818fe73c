"""Plan stage: pure diff, per-kind planners, the immutable plan data, orchestration, rendering.

May import ``reconciler.model``, ``load``, ``client`` and ``state``; never ``apply``, ``inventory``
or ``cli``.
"""
