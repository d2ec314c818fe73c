"""Shared vocabulary: resources and locations, the schema files walked as one tree
(``schematree``) and the field rules read from them (``catalogue``, ``fields``), secret
references, the error tree (``errors``; the API branch in ``apierrors``), version.

Imports nothing from the rest of ``reconciler``; every other package may import it.
"""

__all__: list[str] = []
