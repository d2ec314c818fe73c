"""State: what the API cannot tell us (dashboard ids, secret fingerprints), and where it is kept.

May import ``reconciler.model`` only.
"""

__all__: list[str] = []
