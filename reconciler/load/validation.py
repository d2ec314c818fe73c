"""The ``validate -o json`` document: ``exitCode`` and typed ``errors[]`` as every command's.

Built here, below the command line, so that the CLI's error handler and ``validate`` itself
print the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.model.json import JsonLike, JsonMapping

__all__ = ["document"]


def document(
    errors: Sequence[JsonMapping], resources: Sequence[JsonMapping], exit_code: int
) -> dict[str, JsonLike]:
    """Return ``validate -o json``'s document: ``exitCode`` and typed ``errors[]`` as elsewhere."""
    return {
        "formatVersion": 1,
        "exitCode": exit_code,
        "valid": not errors,
        "errors": errors,
        "resources": resources,
    }
