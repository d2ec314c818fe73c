"""Client stage: the one HTTP client (``api``), its request budget, the one path builder
(``paths``) and the read layer (``live``).
May import ``reconciler.model`` only.
"""
