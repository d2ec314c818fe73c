"""The JSON types every stage speaks: manifest trees, request and response bodies, state documents.

``JsonValue`` is what ``json.loads`` returns and ``json.dumps`` accepts; ``JsonObject`` is the object
case, which is what most bodies and specs are. ``dict`` and ``list`` are invariant, so a function that
only reads a tree takes the read-only variants (``JsonLike``, ``JsonMapping``): a ``dict[str, str]``
or a ``Mapping[str, list[int]]`` is a ``JsonMapping`` but not a ``JsonObject``. Narrow with
``isinstance`` before indexing; ``as_mapping``/``as_items`` read a member that should be an
object or an array (absent or null reads as empty).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = [
    "JsonArray",
    "JsonLike",
    "JsonMapping",
    "JsonObject",
    "JsonScalar",
    "JsonValue",
    "as_items",
    "as_mapping",
]


JsonScalar: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = "JsonScalar | dict[str, JsonValue] | list[JsonValue]"
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]

# Read-only views: what a function that only reads a tree accepts (covariant, so any dict or list of
# JSON values fits, whatever its declared value type).
JsonLike: TypeAlias = "JsonScalar | Mapping[str, JsonLike] | Sequence[JsonLike]"
JsonMapping: TypeAlias = Mapping[str, JsonLike]


def as_mapping(value: object) -> JsonMapping:
    """Return ``value`` when it is a JSON object (read-only), else an empty one (absent, null)."""
    return value if isinstance(value, Mapping) else {}


def as_items(value: object) -> Sequence[JsonLike]:
    """Return ``value`` when it is a JSON array (read-only), else an empty one (absent, null)."""
    return value if isinstance(value, list | tuple) else ()
