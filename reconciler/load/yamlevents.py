"""The event-to-data builder: libyaml events become plain JSON data, bounded as they are read.

Manifests are parsed with libyaml through ruamel's C extension (``CParser``), and the
events are turned into plain ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``
here, with a small YAML 1.2 core-schema resolver (``resolve_plain``): ruamel's own
constructor and resolver are pure Python and cost four times the parse itself. Timestamps
stay strings (JSON has no date type), mapping keys are always the key's text, anchors,
aliases and ``<<`` merge keys work, and a duplicate key in a mapping is an error. Hostile
input is bounded while it is read (``ManifestLimits``): the nodes produced through aliases
are counted (an anchor's size is known once it is built, so an alias costs one addition and
a "billion laughs" stops at the alias that crosses the bound), collections may not nest
deeper than a bound (counting depth reached through aliases too), and an alias to the
collection that holds it is refused.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from reconciler.model.errors import ConfigError
from reconciler.model.json import JsonArray, JsonObject, JsonScalar, JsonValue
from reconciler.model.resources import JsonPath

__all__ = ["YamlSyntaxError"]


try:  # the C extension: the point of this module
    from _ruamel_yaml import CParser as CParser
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


def resolve_plain(value: str) -> JsonScalar:
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


def _tagged(tag: str, value: str, line: int, col: int) -> JsonScalar:
    """Return the value of a scalar with an explicit tag (``!!str``, ``!!int``, …)."""
    name = tag[len(_TAG) :] if tag.startswith(_TAG) else None
    if name == "str" or tag == "!":
        return value
    resolved = resolve_plain(value)
    expected: dict[str | None, Callable[[JsonScalar], bool]] = {
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
    # The check above made a !!float int or float; the isinstance only tells mypy so.
    return float(resolved) if name == "float" and isinstance(resolved, int | float) else resolved


class Builder:
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
        self.anchors: dict[str, JsonValue] = {}
        self.reset_document()

    def reset_document(self) -> None:
        self.anchors = {}
        # Per finished anchor: (nodes in its value, levels from it to its deepest leaf).
        self.sizes: dict[str, tuple[int, int]] = {}
        self.nodes = 0  # nodes produced so far, aliases expanded
        self.alias_nodes = 0
        self.deepest = 0

    def _enter(self, event: Any, path: JsonPath, tag: str, value: JsonValue) -> None:
        """Open the collection ``value`` that ``event`` starts (``tag``: ``map``/``seq``).

        Refuse another tag; count one collection node at depth ``len(path) + 1`` and refuse
        one nested too deep; make its anchor known (unfinished: an alias to it is refused).
        """
        if event.tag not in (None, "!", _TAG + tag):
            mark = event.start_mark
            raise YamlSyntaxError(mark.line + 1, mark.column + 1, f"unsupported tag {event.tag}")
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
        if event.anchor is not None:
            self.anchors[event.anchor] = value

    def _alias(self, event: Any, path: JsonPath) -> JsonValue:
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

    def _anchored(self, event: Any, path: JsonPath) -> JsonValue:
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

    def mark(self, event: Event, path: JsonPath) -> None:
        if path not in self.index:
            mark = event.start_mark
            self.index[path] = (mark.line + 1, mark.column + 1)

    def node(self, event: NodeEvent, path: JsonPath) -> JsonValue:
        """Build the value that starts with ``event`` (its end event is consumed)."""
        if type(event) is AliasEvent:
            return self._alias(event, path)
        if event.anchor is not None:
            return self._anchored(event, path)
        return self._build(event, path)

    def _build(self, event: Any, path: JsonPath) -> JsonValue:
        kind = type(event)
        value: JsonValue
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

    def mapping(self, start: MappingStartEvent, path: JsonPath) -> JsonObject:
        """Build a mapping; duplicate keys are errors, ``<<`` merges."""
        out: JsonObject = {}
        self._enter(start, path, "map", out)
        merges: list[tuple[ScalarEvent, JsonValue]] = []
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
                self.mark(key_event, child)
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

    def sequence(self, start: SequenceStartEvent, path: JsonPath) -> JsonArray:
        """Build a sequence."""
        out: JsonArray = []
        self._enter(start, path, "seq", out)
        get_event = self.parser.get_event
        while True:
            event = get_event()
            if type(event) is SequenceEndEvent:
                break
            child = (*path, len(out))
            if self.positions:
                self.mark(event, child)
            out.append(self.node(event, child))
        return out

    def documents(self) -> list[tuple[JsonValue, tuple[int, int]]]:
        """Return every document as ``(value, (line, col) of its root)``."""
        get_event = self.parser.get_event
        docs: list[tuple[JsonValue, tuple[int, int]]] = []
        try:
            event = get_event()
            assert type(event) is StreamStartEvent
            while True:
                event = get_event()
                if type(event) is StreamEndEvent:
                    break
                assert type(event) is DocumentStartEvent
                self.reset_document()
                root = get_event()
                mark = root.start_mark
                if self.positions or self.marks is not None:
                    self.index = {}
                    self.indexes.append(self.index)
                    self.mark(root, ())
                docs.append((self.node(root, ()), (mark.line + 1, mark.column + 1)))
                assert type(get_event()) is DocumentEndEvent
        except YamlSyntaxError as exc:
            exc.document = len(docs)
            raise
        finally:
            self.parser.dispose()
        return docs
