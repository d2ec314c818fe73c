"""Fast YAML parsing into plain JSON data, with positions on demand.

Manifests are parsed with libyaml through ruamel's C extension (``CParser``), and the
events are turned into plain ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``
here, with a small YAML 1.2 core-schema resolver: ruamel's own constructor and resolver are
pure Python and cost four times the parse itself. Timestamps stay strings (JSON has no date
type), mapping keys are always the key's text, anchors, aliases and ``<<`` merge keys work,
and a duplicate key in a mapping is an error. Hostile input is bounded while it is read
(``ManifestLimits``): the nodes produced through aliases are counted (an anchor's size is known
once it is built, so an alias costs one addition and a "billion laughs" stops at the alias
that crosses the bound, long before anything walks the expanded tree), collections may not
nest deeper than a bound (counting depth reached through aliases too), and an alias to the
collection that holds it is refused. Positions are not recorded on the fast path:
a ``SourceFile`` re-reads its own events once, on the first ``locate`` call, and caches a
``{json path: (line, col)}`` index per document, so only files that need a message pay for it.
"""

from __future__ import annotations

import os
import re
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from reconciler.model.errors import ConfigError, Location
from reconciler.model.resources import JsonPath, PathPart

try:  # the C extension: the point of this module
    from _ruamel_yaml import CParser
except ImportError:  # pragma: no cover - ruamel.yaml.clib is a declared dependency
    CParser = None

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")

_TAG = "tag:yaml.org,2002:"

# The positions a plan needs for every resource (each action names its manifest line). A plan
# records only these while parsing; anything deeper (a changed field, an error) is found by
# parsing that one file again, so 10,000 unchanged manifests keep no position maps.
NAME_PATHS: frozenset[JsonPath] = frozenset({(), ("metadata",), ("metadata", "name")})


@dataclass(frozen=True)
class ManifestLimits:
    """Bounds on one manifest file: nodes produced through aliases, nesting depth, bytes."""

    max_alias_nodes: int = 10_000
    max_depth: int = 100
    max_bytes: int = 4 * 1024 * 1024

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ManifestLimits:
        """Return the defaults with each ``RECONCILE_MANIFEST_MAX_*`` variable that is set."""
        source = os.environ if env is None else env
        values: dict[str, int] = {}
        for name, variable in _LIMIT_VARIABLES:
            text = source.get(variable, "").strip()
            if not text:
                continue
            try:
                values[name] = int(text)
            except ValueError:
                values[name] = 0
            if values[name] <= 0:
                raise ConfigError(f"{variable}={text!r}: expected a positive whole number")
        return cls(**values)


_LIMIT_VARIABLES = (
    ("max_alias_nodes", "RECONCILE_MANIFEST_MAX_ALIAS_NODES"),
    ("max_depth", "RECONCILE_MANIFEST_MAX_DEPTH"),
    ("max_bytes", "RECONCILE_MANIFEST_MAX_BYTES"),
)


DEFAULT_LIMITS = ManifestLimits()


class YamlSyntaxError(Exception):
    """A file that is not well-formed YAML (or not UTF-8), at a 1-based line and column."""

    def __init__(self, line: int, col: int, message: str, key_path: JsonPath = ()) -> None:
        self.line = line
        self.col = col
        self.message = message
        self.key_path = key_path
        self.document = 0
        super().__init__(f"{line}:{col}: {message}")


def resolve_plain(value: str) -> Any:
    """Return the JSON value of an untagged plain scalar (YAML 1.2 core schema)."""
    if not value or value[0] in "~nNtTfF":
        if _NULL.match(value):
            return None
        b = _BOOL.get(value)
        if b is not None:
            return b
        return value
    c = value[0]
    if c.isdigit() or c in "+-.":
        if _INT.match(value):
            return int(value)
        if _FLOAT.match(value):
            return float(value)
        if _INT_OCT.match(value):
            return int(value[2:], 8)
        if _INT_HEX.match(value):
            return int(value[2:], 16)
        if _INF.match(value):
            return float("-inf") if value[0] == "-" else float("inf")
        if _NAN.match(value):
            return float("nan")
    return value


def _tagged(tag: str, value: str, line: int, col: int) -> Any:
    """Return the value of a scalar with an explicit tag (``!!str``, ``!!int``, …)."""
    name = tag[len(_TAG) :] if tag.startswith(_TAG) else None
    if name == "str" or tag == "!":
        return value
    resolved = resolve_plain(value)
    expected: dict[str | None, Callable[[Any], bool]] = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    check = expected.get(name)
    if check is None:
        raise YamlSyntaxError(line, col, f"unsupported tag {tag} (use plain YAML values)")
    if not check(resolved):
        raise YamlSyntaxError(line, col, f"{value!r} is not a valid !!{name}")
    return float(resolved) if name == "float" else resolved


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


class _Builder:
    """Turns the event stream of one file into documents (and optionally positions)."""

    def __init__(
        self,
        data: bytes,
        positions: bool,
        strict: bool | None = None,
        limits: ManifestLimits = DEFAULT_LIMITS,
        marks: frozenset[JsonPath] | None = None,
    ) -> None:
        if CParser is None:  # pragma: no cover
            raise RuntimeError("ruamel.yaml.clib (the C extension) is not installed")
        self.parser = CParser(data)
        self.positions = positions
        # Paths (of depth 2 at most) whose positions are recorded even without ``positions``.
        self.marks = marks
        # Duplicate keys are errors unless only positions are wanted (then the first wins).
        self.strict = not positions if strict is None else strict
        self.limits = limits
        self.index: dict[JsonPath, tuple[int, int]] = {}
        self.indexes: list[dict[JsonPath, tuple[int, int]]] = []
        self.anchors: dict[str, Any] = {}
        self._reset_document()

    def _reset_document(self) -> None:
        self.anchors = {}
        # Per finished anchor: (nodes in its value, levels from it to its deepest leaf).
        self.sizes: dict[str, tuple[int, int]] = {}
        self.nodes = 0  # nodes produced so far, aliases expanded
        self.alias_nodes = 0
        self.deepest = 0

    def _enter(self, event: Any, path: JsonPath) -> None:
        """Count one collection node at depth ``len(path) + 1``; refuse one nested too deep."""
        self.nodes += 1
        depth = len(path) + 1
        if depth > self.deepest:
            if depth > self.limits.max_depth:
                mark = event.start_mark
                raise YamlSyntaxError(
                    mark.line + 1,
                    mark.column + 1,
                    f"collections nested deeper than {self.limits.max_depth} levels "
                    "(raise RECONCILE_MANIFEST_MAX_DEPTH if this is intended)",
                )
            self.deepest = depth

    def _alias(self, event: Any, path: JsonPath) -> Any:
        """Return an anchored value, counting what it expands to against the limits."""
        mark = event.start_mark
        anchor = event.anchor
        if anchor not in self.anchors:
            raise YamlSyntaxError(mark.line + 1, mark.column + 1, f"unknown alias *{anchor}")
        size = self.sizes.get(anchor)
        if size is None:
            raise YamlSyntaxError(
                mark.line + 1,
                mark.column + 1,
                f"alias *{anchor} refers to the collection that holds it",
            )
        nodes, height = size
        self.nodes += nodes
        self.alias_nodes += nodes
        if self.alias_nodes > self.limits.max_alias_nodes:
            raise YamlSyntaxError(
                mark.line + 1,
                mark.column + 1,
                f"aliases expand to more than {self.limits.max_alias_nodes} nodes "
                "(a YAML alias bomb?); raise RECONCILE_MANIFEST_MAX_ALIAS_NODES if this is intended",
            )
        if height:
            depth = len(path) + height
            if depth > self.limits.max_depth:
                raise YamlSyntaxError(
                    mark.line + 1,
                    mark.column + 1,
                    f"alias *{anchor} nests collections deeper than {self.limits.max_depth} "
                    "levels (raise RECONCILE_MANIFEST_MAX_DEPTH if this is intended)",
                )
            self.deepest = max(self.deepest, depth)
        return self.anchors[anchor]

    def _anchored(self, event: Any, path: JsonPath) -> Any:
        """Build an anchored value and record its size and height for later aliases."""
        self.sizes.pop(event.anchor, None)  # a redefined anchor is unfinished again
        nodes, deepest = self.nodes, self.deepest
        self.deepest = len(path)
        value = self._build(event, path)
        height = self.deepest - len(path)
        self.sizes[event.anchor] = (self.nodes - nodes, height)
        self.deepest = max(deepest, self.deepest)
        self.anchors[event.anchor] = value
        return value

    def _mark(self, event: Any, path: JsonPath) -> None:
        if path not in self.index:
            mark = event.start_mark
            self.index[path] = (mark.line + 1, mark.column + 1)

    def node(self, event: Any, path: JsonPath) -> Any:
        """Build the value that starts with ``event`` (its end event is consumed)."""
        if type(event) is AliasEvent:
            return self._alias(event, path)
        if event.anchor is not None:
            return self._anchored(event, path)
        return self._build(event, path)

    def _build(self, event: Any, path: JsonPath) -> Any:
        kind = type(event)
        if kind is ScalarEvent:
            self.nodes += 1
            if event.tag is not None and event.tag != "!":
                mark = event.start_mark
                value = _tagged(event.tag, event.value, mark.line + 1, mark.column + 1)
            elif event.style or event.tag == "!":
                value = event.value
            else:
                value = resolve_plain(event.value)
        elif kind is MappingStartEvent:
            value = self.mapping(event, path)
        elif kind is SequenceStartEvent:
            value = self.sequence(event, path)
        else:  # pragma: no cover - libyaml guarantees the grammar
            mark = event.start_mark
            raise YamlSyntaxError(mark.line + 1, mark.column + 1, "unexpected YAML event")
        return value

    def mapping(self, start: Any, path: JsonPath) -> dict[str, Any]:
        """Build a mapping; duplicate keys are errors, ``<<`` merges."""
        if start.tag not in (None, "!", _TAG + "map"):
            mark = start.start_mark
            raise YamlSyntaxError(mark.line + 1, mark.column + 1, f"unsupported tag {start.tag}")
        self._enter(start, path)
        out: dict[str, Any] = {}
        if start.anchor is not None:
            self.anchors[start.anchor] = out  # known but unfinished: an alias to it is refused
        merges: list[Any] = []
        get_event = self.parser.get_event
        positions = self.positions
        marks = self.marks if len(path) < 2 else None
        strict = self.strict
        while True:
            key_event = get_event()
            if type(key_event) is MappingEndEvent:
                break
            if type(key_event) is not ScalarEvent:
                mark = key_event.start_mark
                raise YamlSyntaxError(
                    mark.line + 1, mark.column + 1, "mapping keys must be plain strings"
                )
            # Keys repeat in every manifest: one string per distinct key, not one per document.
            key = sys.intern(key_event.value)
            if key == "<<" and not key_event.style:
                merges.append((key_event, self.node(get_event(), path)))
                continue
            child = (*path, key)
            if positions or (marks is not None and child in marks):
                self._mark(key_event, child)
            if strict and key in out:
                mark = key_event.start_mark
                raise YamlSyntaxError(
                    mark.line + 1, mark.column + 1, f"duplicate key '{key}'", child
                )
            out[key] = self.node(get_event(), child)
        for key_event, merged in merges:
            sources = merged if isinstance(merged, list) else [merged]
            for source in sources:
                if not isinstance(source, dict):
                    mark = key_event.start_mark
                    raise YamlSyntaxError(
                        mark.line + 1, mark.column + 1, "a << merge key needs a mapping"
                    )
                for k, v in source.items():
                    out.setdefault(k, v)
        return out

    def sequence(self, start: Any, path: JsonPath) -> list[Any]:
        """Build a sequence."""
        if start.tag not in (None, "!", _TAG + "seq"):
            mark = start.start_mark
            raise YamlSyntaxError(mark.line + 1, mark.column + 1, f"unsupported tag {start.tag}")
        self._enter(start, path)
        out: list[Any] = []
        if start.anchor is not None:
            self.anchors[start.anchor] = out  # known but unfinished: an alias to it is refused
        get_event = self.parser.get_event
        while True:
            event = get_event()
            if type(event) is SequenceEndEvent:
                break
            child = (*path, len(out))
            if self.positions:
                self._mark(event, child)
            out.append(self.node(event, child))
        return out

    def documents(self) -> list[tuple[Any, tuple[int, int]]]:
        """Return every document as ``(value, (line, col) of its root)``."""
        get_event = self.parser.get_event
        docs: list[tuple[Any, tuple[int, int]]] = []
        try:
            event = get_event()
            assert type(event) is StreamStartEvent
            while True:
                event = get_event()
                if type(event) is StreamEndEvent:
                    break
                assert type(event) is DocumentStartEvent
                self._reset_document()
                root = get_event()
                mark = root.start_mark
                if self.positions or self.marks is not None:
                    self.index = {}
                    self.indexes.append(self.index)
                    self._mark(root, ())
                docs.append((self.node(root, ()), (mark.line + 1, mark.column + 1)))
                assert type(get_event()) is DocumentEndEvent
        except YamlSyntaxError as exc:
            exc.document = len(docs)
            raise
        finally:
            self.parser.dispose()
        return docs


def parse(data: bytes, limits: ManifestLimits = DEFAULT_LIMITS) -> list[Any]:
    """Parse every document of ``data`` into plain JSON data (raise ``YamlSyntaxError``)."""
    text = _decode_check(data)
    try:
        return [doc for doc, _ in _Builder(data, False, None, limits).documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None


def parse_located(
    data: bytes, limits: ManifestLimits = DEFAULT_LIMITS
) -> tuple[list[Any], list[dict[JsonPath, tuple[int, int]]]]:
    """Parse like ``parse`` and also return each document's position index, in one pass."""
    text = _decode_check(data)
    builder = _Builder(data, positions=True, strict=True, limits=limits)
    try:
        docs = [doc for doc, _ in builder.documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None
    return docs, builder.indexes


def parse_marked(
    data: bytes,
    limits: ManifestLimits = DEFAULT_LIMITS,
    marks: frozenset[JsonPath] = NAME_PATHS,
) -> tuple[list[Any], list[dict[JsonPath, tuple[int, int]]]]:
    """Parse like ``parse`` and return each document's positions of ``marks`` only (cheap)."""
    text = _decode_check(data)
    builder = _Builder(data, positions=False, strict=True, limits=limits, marks=marks)
    try:
        docs = [doc for doc, _ in builder.documents()]
    except YAMLError as exc:
        raise _syntax_error(exc, text) from None
    return docs, builder.indexes


def position_index(data: bytes) -> list[dict[JsonPath, tuple[int, int]]]:
    """Return, per document, the 1-based (line, col) of every key and list item by path."""
    builder = _Builder(data, positions=True)
    out: list[dict[JsonPath, tuple[int, int]]] = []
    try:
        get_event = builder.parser.get_event
        get_event()
        while True:
            event = get_event()
            if type(event) is StreamEndEvent:
                break
            builder.index = {}
            builder._reset_document()
            root = get_event()
            builder._mark(root, ())
            builder.node(root, ())
            get_event()
            out.append(builder.index)
    except (YAMLError, YamlSyntaxError, AssertionError):
        out.append(builder.index)  # a broken file: keep what was read before the error
    finally:
        builder.parser.dispose()
    return out


@dataclass(slots=True)
class SourceFile:
    """One manifest file: its name as shown to the user, its bytes, and a lazy position index.

    ``_marks`` holds the few positions recorded while parsing (``parse_marked``); a path
    outside them builds the full index by parsing the file again, which ``release`` drops
    once no more locations will be asked for. With ``path`` set the bytes are not kept at
    all: they are read again (and checked against ``digest``) if a position is ever needed.
    """

    name: str
    data: bytes
    _index: list[dict[JsonPath, tuple[int, int]]] | None = None
    _marks: list[dict[JsonPath, tuple[int, int]]] | None = None
    path: Path | None = None
    digest: int = 0
    size: int = 0

    @classmethod
    def unloaded(
        cls, name: str, path: Path, data: bytes, marks: list[dict[JsonPath, tuple[int, int]]]
    ) -> SourceFile:
        """Return a source that re-reads ``path`` when it needs its bytes again."""
        return cls(name, b"", _marks=marks, path=path, digest=zlib.crc32(data), size=len(data))

    def _bytes(self) -> bytes:
        if self.path is None:
            return self.data
        try:
            with self.path.open("rb") as handle:
                data = handle.read(self.size + 1)  # never more than what was parsed
        except OSError:
            return b""
        # Changed since it was parsed: its positions would be wrong, so give none.
        same = len(data) == self.size and zlib.crc32(data) == self.digest
        return data if same else b""

    def positions(self, document: int) -> dict[JsonPath, tuple[int, int]]:
        """Return the position index of one document (parsing the file again on first use)."""
        if self._index is None:
            self._index = position_index(self._bytes())
        if 0 <= document < len(self._index):
            return self._index[document]
        return {}

    def locate(self, document: int, path: Sequence[PathPart]) -> Location:
        """Return where ``path`` (or its nearest present parent) is in one document."""
        key = tuple(path)
        if self._index is None and self._marks is not None and 0 <= document < len(self._marks):
            marked = self._marks[document].get(key)
            if marked is not None:
                return Location(self.name, marked[0], marked[1])
        index = self.positions(document)
        while True:
            found = index.get(key)
            if found is not None:
                return Location(self.name, found[0], found[1])
            if not key:
                return Location(self.name, 1, 1)
            key = key[:-1]

    def release(self) -> None:
        """Drop the full position index (it is rebuilt from the bytes if asked for again)."""
        self._index = None


@dataclass(frozen=True)
class DocumentLocator:
    """The ``Locator`` of one document: asks its ``SourceFile``, which parses lazily."""

    source: SourceFile
    document: int

    def locate(self, path: Sequence[PathPart]) -> Location:
        """Return the location of ``path`` (or of its nearest present parent)."""
        return self.source.locate(self.document, path)

    def release(self) -> None:
        """Let the file drop its full position index: no more locations will be asked for."""
        self.source.release()
