"""The client's defaults, in a module that imports nothing.

``ApiConfig`` and ``RequestLimits`` take their defaults from here, and so do the settings
(``reconciler.settings``), which show them as every command's defaults. Resolving the settings
thus does not import the HTTP stack: the command line starts reading the manifests before it
imports that (``reconciler.load.reading``).
"""

from __future__ import annotations

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
