"""Plan stage: pure diff, per-kind planners, the immutable plan data, the engine, rendering.

``run.compute_plan`` is ``reconcile plan`` as one call; ``compute.plan_resources`` its engine:
one refresh (a ``LiveSnapshot``), then ``compute.plan_snapshot``, which binds and plans without
a request.
May import ``reconciler.model``, ``load``, ``client`` and ``state``; never ``apply``, ``inventory``
or ``cli``.
"""

__all__: list[str] = []
