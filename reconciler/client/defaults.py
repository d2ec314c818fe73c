"""The client's defaults, in a module that imports nothing heavy (no HTTP stack, no asyncio).

``ApiConfig`` and ``RequestLimits`` take their defaults from here, and so do the settings
(``reconciler.settings``), which show them as every command's defaults. Resolving the settings
thus does not import the HTTP stack, which `validate` never needs.
"""

from __future__ import annotations

import math

from reconciler.model.errors import ConfigError

__all__ = [
    "DASHBOARDS_RATE",
    "DEADLINE",
    "MANAGEMENT_RATE",
    "MAX_ATTEMPTS",
    "MAX_RESPONSE_BYTES",
    "MAX_WAIT",
    "PARALLELISM",
    "RETRY_BUDGET",
    "TIMEOUT",
    "parse_size",
    "rate_text",
    "size_text",
]


MIB = 1024 * 1024

# The service's own limits per key: 10 management requests per 10 s, 100 dashboards per
# minute, as (requests, seconds).
MANAGEMENT_RATE = (10, 10.0)
DASHBOARDS_RATE = (100, 60.0)
PARALLELISM = 8
TIMEOUT = 30.0  # seconds a read or a connect may take
MAX_ATTEMPTS = 6
MAX_BACKOFF = 20.0
# The bounds of one logical request (``limits.RequestLimits``).
MAX_WAIT = 60.0
RETRY_BUDGET = 120.0
DEADLINE = 60.0
MAX_RESPONSE_BYTES = 16 * MIB


def rate_text(rate: tuple[int, float]) -> str:
    """Spell a default rate as ``--rate`` takes it (``10/10``)."""
    count, seconds = rate
    return f"{count}/{seconds:g}"


def size_text(size: int) -> str:
    """Spell a default size as ``--max-response-size`` takes it (``16MiB``)."""
    return f"{size // MIB}MiB" if size % MIB == 0 else str(size)


_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": MIB, "mb": MIB, "mib": MIB}
_UNITS.update({"g": 1024 * MIB, "gb": 1024 * MIB, "gib": 1024 * MIB})


def parse_size(text: str) -> int:
    """Parse a size: bytes (``1048576``) or with a unit (``16MiB``, ``512k``, ``1 GiB``)."""
    raw = text.strip().lower().replace(" ", "")
    number = raw.rstrip("kmgib")
    unit = raw[len(number) :]
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ConfigError(f"invalid size {text!r}: expected bytes or e.g. 16MiB") from None
    if not math.isfinite(value) or value < 1:
        raise ConfigError(f"invalid size {text!r}: expected at least one byte")
    return int(value)
