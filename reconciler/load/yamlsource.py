"""Fast YAML parsing into plain JSON data, with positions on demand: the load stage's entry.

``parse`` returns every document of a file as plain data; ``parse_located`` also returns
every position, ``parse_marked`` only the few a plan needs (``NAME_PATHS``). Text that is
not UTF-8 or not well-formed YAML raises ``YamlSyntaxError`` at a line and column. The
event-to-data builder, its scalar resolver and the ``ManifestLimits`` bounds live in
``reconciler.load.yamlevents``; lazy positions (``SourceFile``, ``DocumentLocator``,
``position_index``) in ``reconciler.load.positions``. Both are re-exported here.
"""

from __future__ import annotations

from ruamel.yaml.error import MarkedYAMLError, YAMLError

from reconciler.load.positions import DocumentLocator, SourceFile, position_index
from reconciler.load.yamlevents import (
    DEFAULT_LIMITS,
    Builder,
    CParser,
    ManifestLimits,
    YamlSyntaxError,
    resolve_plain,
)
from reconciler.model.json import JsonValue
from reconciler.model.resources import JsonPath

__all__ = [
    "CParser",
    "DocumentLocator",
    "ManifestLimits",
    "SourceFile",
    "YamlSyntaxError",
    "parse",
    "position_index",
    "resolve_plain",
]

# The positions a plan needs for every resource (each action names its manifest line). A plan
# records only these while parsing; anything deeper (a changed field, an error) is found by
# parsing that one file again, so 10,000 unchanged manifests keep no position maps.
NAME_PATHS: frozenset[JsonPath] = frozenset({(), ("metadata",), ("metadata", "name")})


def _decode_check(data: bytes) -> str:
    """Return ``data`` as text, or raise ``YamlSyntaxError`` at the first invalid byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        col = len(data[start : exc.start].decode("utf-8", errors="replace")) + 1
        raise YamlSyntaxError(
            line, col, f"invalid UTF-8 (byte 0x{data[exc.start]:02x}): manifests must be UTF-8"
        ) from None


def _syntax_error(exc: YAMLError, text: str) -> YamlSyntaxError:
    """Turn a libyaml error into a ``YamlSyntaxError`` with a readable message."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else 1
    col = mark.column + 1 if mark is not None else 1
    lines = text.splitlines()
    if 0 < line <= len(lines):
        row = lines[line - 1]
        indent = row[: len(row) - len(row.lstrip(" \t"))]
        if "\t" in indent or (col - 1 < len(row) and row[col - 1] == "\t"):
            tab = indent.find("\t") + 1 if "\t" in indent else col
            return YamlSyntaxError(line, tab, "tab character in indentation: indent with spaces")
    if isinstance(exc, MarkedYAMLError):
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        message = f"YAML syntax error: {problem}{context}"
    else:
        message = f"YAML syntax error: {exc}"
    return YamlSyntaxError(line, col, message)


def parse(data: bytes, limits: ManifestLimits = DEFAULT_LIMITS) -> list[JsonValue]:
    """Parse every document of ``data`` into plain JSON data (raise ``YamlSyntaxError``)."""
    text = _decode_check(data)
    try:
        return [doc for doc, _ in Builder(data, False, None, limits).documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None


def parse_located(
    data: bytes, limits: ManifestLimits = DEFAULT_LIMITS
) -> tuple[list[JsonValue], list[dict[JsonPath, tuple[int, int]]]]:
    """Parse like ``parse`` and also return each document's position index, in one pass."""
    text = _decode_check(data)
    builder = Builder(data, positions=True, strict=True, limits=limits)
    try:
        docs = [doc for doc, _ in builder.documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None
    return docs, builder.indexes


def parse_marked(
    data: bytes,
    limits: ManifestLimits = DEFAULT_LIMITS,
    marks: frozenset[JsonPath] = NAME_PATHS,
) -> tuple[list[JsonValue], list[dict[JsonPath, tuple[int, int]]]]:
    """Parse like ``parse`` and return each document's positions of ``marks`` only (cheap)."""
    text = _decode_check(data)
    builder = Builder(data, positions=False, strict=True, limits=limits, marks=marks)
    try:
        docs = [doc for doc, _ in builder.documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None
    return docs, builder.indexes
