"""Client stage: the one HTTP client (``api``), its request budget and limits, the one path
builder (``paths``), the one read layer (``reads``) and the plan's bulk fetcher (``live``).
May import ``reconciler.model`` only.
"""
