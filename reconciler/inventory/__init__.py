"""Inventory: read-only views of the live organization (``get``, ``export``, ``check backups``).

May import ``reconciler.model``, ``load``, ``client`` and ``state``; never ``plan``, ``apply`` or ``cli``.
"""

__all__: list[str] = []
