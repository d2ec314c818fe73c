"""Load stage: YAML source with positions, JSON Schemas, manifests into ``Resource`` objects.

May import ``reconciler.model`` only.
"""

__all__: list[str] = []
