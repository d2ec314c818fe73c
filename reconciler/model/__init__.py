"""Shared vocabulary: resources and locations, the schema files and their field rules, secret
references, errors, version.

Imports nothing from the rest of ``reconciler``; every other package may import it.
"""

__all__: list[str] = []
