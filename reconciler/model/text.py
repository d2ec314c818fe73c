"""Showing text that came from a server or a manifest, in a terminal, a text log or a page.

Such text is not ours: a server message holding a newline would print a line of its own in
``watch``'s text log (a forged metric, a forged header), an escape sequence would drive the
terminal, and a bidirectional override (U+202E…) would show a name other than the one it is.
``shown`` writes every control character (C0, DEL, C1, the line and paragraph separators)
and every bidirectional embedding, override and isolate as a visible escape (``\\n``,
``\\x1b``, ``\\u202e``), and cuts a long text (a server message: 1,000 characters) saying how
much was left out. JSON output needs none of this: ``json.dumps`` escapes control characters
and a JSON reader never mistakes one value for two.
"""

from __future__ import annotations

import re

__all__ = ["MAX_SERVER_MESSAGE", "shown"]


# The most of a server's message shown in a terminal, a text log or the status page.
MAX_SERVER_MESSAGE = 1000

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def shown(text: object, limit: int | None = None) -> str:
    """Return ``text`` safe to print on one line: controls and bidi marks escaped, and cut
    after ``limit`` characters (saying how many were left out)."""
    value = "" if text is None else str(text)
    cut = ""
    if limit is not None and len(value) > limit:
        value, cut = value[:limit], f"… ({len(value) - limit} more characters)"
    return _UNSAFE.sub(_escape, value) + cut
