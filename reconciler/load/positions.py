"""Positions of keys and list items in a manifest, found only when a message needs them.

Positions are not recorded on the fast path: a ``SourceFile`` re-reads its own events once,
on the first ``locate`` call, and caches a ``{json path: (line, col)}`` index per document
(``position_index``), so only files that need a message pay for it. ``DocumentLocator`` is
the ``Locator`` of one document.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import StreamEndEvent

from reconciler.load.yamlevents import Builder, YamlSyntaxError
from reconciler.model.errors import Location
from reconciler.model.resources import JsonPath, PathPart

__all__: list[str] = []


def position_index(data: bytes) -> list[dict[JsonPath, tuple[int, int]]]:
    """Return, per document, the 1-based (line, col) of every key and list item by path."""
    builder = Builder(data, positions=True)
    out: list[dict[JsonPath, tuple[int, int]]] = []
    try:
        get_event = builder.parser.get_event
        get_event()
        while True:
            event = get_event()
            if type(event) is StreamEndEvent:
                break
            builder.index = {}
            builder.reset_document()
            root = get_event()
            builder.mark(root, ())
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
    path: str | None = None
    digest: int = 0
    size: int = 0

    @classmethod
    def unloaded(
        cls,
        name: str,
        path: str | Path,
        data: bytes,
        marks: list[dict[JsonPath, tuple[int, int]]],
    ) -> SourceFile:
        """Return a source that re-reads ``path`` when it needs its bytes again."""
        return cls(
            name, b"", _marks=marks, path=os.fspath(path), digest=zlib.crc32(data), size=len(data)
        )

    def _bytes(self) -> bytes:
        if self.path is None:
            return self.data
        try:
            with open(self.path, "rb") as handle:
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

    def __reduce__(self) -> tuple[type[DocumentLocator], tuple[SourceFile, int]]:
        return (DocumentLocator, (self.source, self.document))  # cheap, as SourceFile's

    def locate(self, path: Sequence[PathPart]) -> Location:
        """Return the location of ``path`` (or of its nearest present parent)."""
        return self.source.locate(self.document, path)

    def release(self) -> None:
        """Let the file drop its full position index: no more locations will be asked for."""
        self.source.release()


@dataclass(frozen=True)
class MergedLocator:
    """The ``Locator`` of a document merged from several (a base manifest and its overlays).

    ``layers`` are the documents merged, base first; ``origins`` maps each path where a layer
    set a value (a key it added or a value it replaced) to that layer's index. A path is
    located in the layer that wrote its nearest recorded ancestor, so a message names the
    overlay's line for a value the overlay set and the base's for one it left alone.
    """

    layers: tuple[DocumentLocator, ...]
    origins: dict[JsonPath, int]

    @property
    def source(self) -> SourceFile:
        """Return the first layer's source (the file a patched resource is filed under)."""
        return self.layers[0].source

    @property
    def document(self) -> int:
        """Return the first layer's document index."""
        return self.layers[0].document

    @property
    def files(self) -> tuple[str, ...]:
        """Return the names of the files merged, in order, each once."""
        return tuple(dict.fromkeys(layer.source.name for layer in self.layers))

    def origin(self, path: Sequence[PathPart]) -> DocumentLocator:
        """Return the layer that wrote the value at ``path`` (or its nearest written parent)."""
        key = tuple(path)
        for end in range(len(key), -1, -1):
            found = self.origins.get(key[:end])
            if found is not None:
                return self.layers[found]
        return self.layers[0]

    def file_of(self, path: Sequence[PathPart]) -> str:
        """Return the name of the file that wrote the value at ``path``."""
        return self.origin(path).source.name

    def locate(self, path: Sequence[PathPart]) -> Location:
        """Return the location of ``path`` in the file that wrote it."""
        return self.origin(path).locate(path)

    def release(self) -> None:
        """Let every layer's file drop its full position index."""
        for layer in self.layers:
            layer.release()
