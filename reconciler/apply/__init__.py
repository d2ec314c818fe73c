"""Apply stage: ``run.apply_plan`` (``reconcile apply`` as one call), the applier that walks a
plan's actions and verifies each answer (one action's requests: ``sending``), and the saved-plan checks (stale, already applied).

May import ``reconciler.plan`` and everything below it; never ``inventory`` or ``cli``.
"""

__all__: list[str] = []
