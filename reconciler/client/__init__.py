"""Client stage: the one HTTP client (``api``), its request budget, and the read layer (``live``).

May import ``reconciler.model`` only.
"""
