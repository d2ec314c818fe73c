"""Client stage: the one HTTP client (``api``; each attempt on the wire in ``wire``), its
sliding-window rate limiter (``ratelimit``), retries (``retry``), health and request limits,
the one path builder (``paths``), the one read layer (``reads``) and the refresh (``live``)
that reads a plan's ``LiveSnapshot`` in bulk.

May import ``reconciler.model`` only.
"""

__all__: list[str] = []
