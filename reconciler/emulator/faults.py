"""Behaviour switches for tests and benchmarks: latency, injected faults and the rate limit.

``EmulatorConfig`` is the runtime-changeable configuration (``POST /_emulator/config``). The
rate limit is a sliding log per key: at most N *admitted* requests in any window of S seconds,
which is stricter than a fixed window and therefore what a client's budget must be built for;
rejected requests are not logged, so a client that waits the advertised time always gets in.
Faults are drawn from a seeded generator so a failing run can be replayed: 503 and 502 are
decided before the request is applied, while a dropped connection may happen before or after
the write — the "outcome unknown" case a careful client must handle.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["EmulatorConfig", "parse_rate_limit"]


FAULTS = ("503", "502", "drop")


def parse_rate_limit(text: str) -> tuple[int, float]:
    """Parse ``N/SECONDS`` (e.g. ``10/10``) into (count, window seconds)."""
    count, sep, window = text.partition("/")
    try:
        parsed = (int(count), float(window))
    except ValueError:
        raise ValueError(f"rate limit must look like N/SECONDS, got {text!r}") from None
    if not sep or parsed[0] < 1 or not parsed[1] > 0 or not math.isfinite(parsed[1]):
        raise ValueError(f"rate limit must look like N/SECONDS with N >= 1, got {text!r}")
    return parsed


@dataclass
class EmulatorConfig:
    """What tests may change at runtime; field names map to the camelCase JSON keys."""

    spec_only: bool = False
    latency_ms: int = 0
    fault_rate: float = 0.0
    fault_seed: int = 0
    rate_limit: tuple[int, float] | None = None
    # How long a pipe stays in a transitional state (Provisioning, Stopping, ...).
    transition_ms: int = 300

    def to_json(self) -> dict[str, Any]:
        """The configuration as ``GET /_emulator/config`` shows it."""
        limit = None
        if self.rate_limit is not None:
            count, window = self.rate_limit
            limit = f"{count}/{window:g}"
        return {
            "specOnly": self.spec_only,
            "latencyMs": self.latency_ms,
            "faultRate": self.fault_rate,
            "faultSeed": self.fault_seed,
            "rateLimit": limit,
            "transitionMs": self.transition_ms,
        }

    def update(self, body: Any) -> None:
        """Apply a ``POST /_emulator/config`` body; raises ValueError naming a bad key."""
        if not isinstance(body, dict):
            raise ValueError("config body must be a JSON object")
        known = {"specOnly", "latencyMs", "faultRate", "faultSeed", "rateLimit", "transitionMs"}
        for key in body:
            if key not in known:
                raise ValueError(f"unknown config key {key!r}; known: {sorted(known)}")
        new = EmulatorConfig(**vars(self))
        if "specOnly" in body:
            if not isinstance(body["specOnly"], bool):
                raise ValueError("specOnly must be a boolean")
            new.spec_only = body["specOnly"]
        if "latencyMs" in body:
            new.latency_ms = _int(body["latencyMs"], "latencyMs")
        if "faultRate" in body:
            rate = body["faultRate"]
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
                raise ValueError("faultRate must be a number between 0 and 1")
            new.fault_rate = float(rate)
        if "transitionMs" in body:
            new.transition_ms = _int(body["transitionMs"], "transitionMs")
        if "faultSeed" in body:
            new.fault_seed = _int(body["faultSeed"], "faultSeed")
        if "rateLimit" in body:
            limit = body["rateLimit"]
            if limit is not None and not isinstance(limit, str):
                raise ValueError("rateLimit must be 'N/SECONDS' or null")
            new.rate_limit = None if limit is None else parse_rate_limit(limit)
        vars(self).update(vars(new))


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer")
    return value


class SlidingWindowLimiter:
    """At most ``limit`` admitted requests per key in any window of ``window`` seconds."""

    def __init__(self, limit: int, window: float):
        self.limit = limit
        self.window = window
        self._admitted: dict[str, deque[float]] = {}

    def admit(self, key: str, now: float) -> float | None:
        """None when admitted (and recorded); else the seconds until a slot frees."""
        log = self._admitted.setdefault(key, deque())
        while log and log[0] <= now - self.window:
            log.popleft()
        if len(log) < self.limit:
            log.append(now)
            return None
        return max(log[0] + self.window - now, 0.001)


class FaultInjector:
    """Seeded decisions: which request fails, how, and whether a drop happens after the write."""

    def __init__(self, rate: float, seed: int):
        self.rate = rate
        self._rng = random.Random(seed)

    def decide(self) -> str | None:
        """``"503"``, ``"502"``, ``"drop"`` or None (no fault) for the next request."""
        if self.rate <= 0:
            return None
        if self._rng.random() >= self.rate:
            return None
        return self._rng.choice(FAULTS)

    def applied_before_drop(self) -> bool:
        """Whether a dropped request is applied before the connection is cut (a coin flip)."""
        return self._rng.random() < 0.5


def reset_headers(wait: float) -> dict[str, str]:
    """429 headers: ``X-RateLimit-Reset`` in decimal seconds, ``Retry-After`` whole seconds ≥ 1."""
    return {
        "X-RateLimit-Reset": f"{math.ceil(wait * 1000) / 1000:.3f}",
        "Retry-After": str(max(1, math.ceil(wait))),
    }
