"""Bounds on every request: waits, retries, one attempt's duration, response size.

A hostile or broken server must never hold a run for ever or exhaust its memory, so each
logical request (``Client.call``) is bounded four ways, all configurable (``RequestLimits``,
flags and ``RECONCILE_*`` variables):

- a wait the server asks for (``X-RateLimit-Reset`` / ``Retry-After``, parsed here in every
  form: delta seconds, epoch seconds, HTTP date; a negative or unreadable value is ignored)
  is capped at ``max_wait``;
- the whole request, every attempt and wait included, ends within ``retry_budget`` seconds
  and ``max_attempts`` attempts, after which the error says what was tried;
- one attempt, from sending to the last byte of the body, ends within ``deadline`` seconds,
  so a server that trickles its body cannot extend it (the per-read ``timeout`` cannot see
  that);
- a response body larger than ``max_response_bytes`` is refused while it is read.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

from reconciler.client import defaults
from reconciler.client.defaults import MIB
from reconciler.model.errors import ConfigError

__all__ = ["RequestLimits"]


# Waits in X-RateLimit-Reset / Retry-After above this are epoch seconds (2001-09-09 onwards),
# not a delta: no server asks a client to wait thirty years.
_EPOCH_FROM = 1_000_000_000

# The headers a 429 (or 503) may carry, in order of preference: the first usable one wins.
WAIT_HEADERS = ("X-RateLimit-Reset", "Retry-After")


@dataclass(frozen=True)
class RequestLimits:
    """The bounds of one logical request; see the module docstring."""

    max_wait: float = defaults.MAX_WAIT
    retry_budget: float = defaults.RETRY_BUDGET
    deadline: float = defaults.DEADLINE
    max_response_bytes: int = defaults.MAX_RESPONSE_BYTES

    # (field, flag, environment variable) of each bound, for messages and the CLI.
    SETTINGS = (
        ("max_wait", "--max-wait", "RECONCILE_MAX_WAIT"),
        ("retry_budget", "--retry-budget", "RECONCILE_RETRY_BUDGET"),
        ("deadline", "--request-deadline", "RECONCILE_REQUEST_DEADLINE"),
        ("max_response_bytes", "--max-response-size", "RECONCILE_MAX_RESPONSE_SIZE"),
    )

    def __post_init__(self) -> None:
        for name, flag, variable in self.SETTINGS:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{flag} / {variable}: expected a positive number, got {value}")

    @staticmethod
    def option(name: str) -> str:
        """Return ``--flag / VARIABLE`` of one field, for messages that say how to change it."""
        for field_name, flag, variable in RequestLimits.SETTINGS:
            if field_name == name:
                return f"{flag} / {variable}"
        raise KeyError(name)


def format_size(n: float) -> str:
    """Return ``n`` bytes as ``16 MiB`` / ``512 KiB`` / ``100 B``."""
    for unit, scale in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{int(n)} B"


def parse_wait(value: str | None, now: float | None = None) -> float | None:
    """Return the seconds to wait that one header value asks for, or None if it is unusable.

    Accepts delta seconds (``5``, ``0.25``), epoch seconds (``1767225600``) and an HTTP date
    (``Wed, 21 Oct 2026 07:28:00 GMT``); a time in the past is a wait of zero. Negative,
    non-finite and unreadable values are ignored (None).
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    current = time.time() if now is None else now
    try:
        number = float(text)
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if moment.tzinfo is None:
            return None
        return max(0.0, moment.timestamp() - current)
    if not math.isfinite(number) or number < 0:
        return None
    if number >= _EPOCH_FROM:
        return max(0.0, number - current)
    return number


def server_wait(headers: httpx.Headers, now: float | None = None) -> tuple[float, str] | None:
    """Return ``(seconds, header)`` of the first usable wait header, or None."""
    for name in WAIT_HEADERS:
        seconds = parse_wait(headers.get(name), now)
        if seconds is not None:
            return seconds, name
    return None


def redirect_target(response: httpx.Response) -> str:
    """Return where a redirect pointed, without its query (which may carry a token)."""
    location = response.headers.get("Location")
    if not location:
        return "no Location given"
    try:
        url = response.request.url.join(location)
    except (httpx.InvalidURL, RuntimeError):
        return repr(location[:200])
    return str(url.copy_with(query=None, fragment=None))


class BodyTooLarge(Exception):
    """A response body above the cap; the message says how much was declared or read."""


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """Read a streamed body of at most ``limit`` bytes (decoded); raise ``BodyTooLarge`` past it."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit and "Content-Encoding" not in response.headers:
        raise BodyTooLarge(f"Content-Length says {format_size(int(declared))}")
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge(f"stopped reading at {format_size(total)}")
        chunks.append(chunk)
    return b"".join(chunks)
