"""Apply stage: walks a plan's actions, verifies each answer, checks saved plans for staleness.

May import ``reconciler.plan`` and everything below it; never ``inventory`` or ``cli``.
"""
