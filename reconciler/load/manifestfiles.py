"""Finding and reading manifest files: paths to parsed YAML documents, each with its source.

A directory is searched recursively for ``*.yaml`` / ``*.yml``, hidden directories and the
project file ``reconcile.yaml`` skipped, results sorted; a path that does not exist, is neither
file nor directory, or is a directory without manifests is reported, never skipped. Each file
is parsed with the fast C-backed parser of ``reconciler.load.yamlsource``, recording every
position, only each document's (the others found by parsing again on first use), or none, as
the caller asks. A file is read only up to its size bound, and parsing bounds alias expansion
and nesting depth (``ManifestLimits``, defaults overridable by ``RECONCILE_MANIFEST_MAX_*``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from reconciler.load.yamlsource import (
    ManifestLimits,
    SourceFile,
    YamlSyntaxError,
    parse,
    parse_located,
    parse_marked,
)
from reconciler.model.errors import Location, ManifestError, ManifestErrors
from reconciler.model.json import JsonValue
from reconciler.model.resources import format_path

__all__ = ["find_manifest_files", "scan_manifest_paths"]


SUFFIXES = (".yaml", ".yml")


def _display(path: str | Path) -> str:
    """The name a user sees: the path as found, with forward slashes (``as_posix``)."""
    text = os.fspath(path)
    return text if os.sep == "/" else text.replace(os.sep, "/")


def scan_manifest_paths(paths: Sequence[str | Path]) -> tuple[list[str], list[ManifestError]]:
    """Return the manifest files under ``paths`` and an error for each unusable path."""
    from reconciler.load.project import FILE_NAME as PROJECT_FILE

    # Plain strings, not Path objects: building 10,000 of those took ~0.1 s before the
    # first manifest could be read. Each string is a normalised path (os.walk joins the
    # given directory's normalised form with plain names), so it is what Path would print
    # (a test compares both on nested, relative and "." directories).
    found: dict[str, str] = {}
    errors: list[ManifestError] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            hits: list[str] = []
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                # As Path prints it: "." is no prefix ("./a/x.yaml" is "a/x.yaml").
                head = "" if root == "." else root.removeprefix("." + os.sep)
                # The project file is not a manifest: `validate .` at the project root works.
                hits.extend(
                    os.path.join(head, f) if head else f
                    for f in files
                    if f.endswith(SUFFIXES) and not f.startswith(".") and f != PROJECT_FILE
                )
            if not hits:
                errors.append(
                    ManifestError(
                        Location(_display(path)), "", "directory holds no *.yaml or *.yml files"
                    )
                )
            for hit in hits:
                found.setdefault(_display(hit), hit)
        elif path.is_file():
            found.setdefault(_display(path), os.fspath(path))
        elif path.exists():
            errors.append(ManifestError(Location(_display(path)), "", "not a file or directory"))
        else:
            errors.append(ManifestError(Location(_display(path)), "", "no such file or directory"))
    return [found[name] for name in sorted(found)], errors


def find_manifest_files(paths: Sequence[str | Path]) -> list[Path]:
    """Return every manifest file under ``paths``, sorted; raise ManifestErrors for bad paths."""
    files, errors = scan_manifest_paths(paths)
    if errors:
        raise ManifestErrors(errors)
    return [Path(f) for f in files]


class _TooLarge(Exception):
    """A manifest file above the size bound (its message says so)."""


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _read_bounded(path: str | Path, max_bytes: int) -> bytes:
    """Read a file of at most ``max_bytes`` (never more than one byte past it, even if it grows)."""
    # A raw descriptor, not a buffered file object: for 10,000 small manifests the objects,
    # the buffer and the extra system calls of ``open()`` (block size, isatty) cost more
    # than the reads. Ask for the file's size (+1 to see growth), never for the bound.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        limit = max_bytes + 1
        want = min(os.fstat(fd).st_size, max_bytes) + 1
        chunks: list[bytes] = []
        total = 0
        while total < limit:
            ask = min(want, limit - total)
            chunks.append(os.read(fd, ask))
            total += len(chunks[-1])
            if len(chunks[-1]) < ask:  # a short read of a regular file: its end
                break
            want = 1 << 16  # it grew while being read: go on, up to the bound
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > max_bytes:
            total = max(os.fstat(fd).st_size, len(data))
            raise _TooLarge(
                f"file is {_size(total)}, more than the limit of {_size(max_bytes)} for one "
                "manifest (split it, or raise RECONCILE_MANIFEST_MAX_BYTES)"
            )
    finally:
        os.close(fd)
    return data


def read_manifest_file(
    path: str, limits: ManifestLimits, *, positions: bool, full_positions: bool
) -> tuple[SourceFile, list[JsonValue]] | ManifestError:
    """Parse one file into its source and documents, or return the error saying why it cannot be
    (unreadable, too large, not YAML or holding no manifest); ``positions`` as for a reader."""
    name = _display(path)
    try:
        data = _read_bounded(path, limits.max_bytes)
    except OSError as exc:
        return ManifestError(Location(name), "", f"cannot read: {exc.strerror}")
    except _TooLarge as exc:
        return ManifestError(Location(name), "", str(exc))
    source = SourceFile(name, data)
    try:
        if positions and full_positions:
            docs, located = parse_located(data, limits)
            source = SourceFile(name, data, located)
        elif positions:
            docs, marks = parse_marked(data, limits)
            source = SourceFile.unloaded(name, path, data, marks)
        else:
            docs = parse(data, limits)
    except YamlSyntaxError as exc:
        message = exc.message
        if exc.key_path:
            first = source.positions(exc.document).get(exc.key_path)
            if first is not None:
                message += f" (first defined at line {first[0]})"
        path_text = format_path(exc.key_path)
        return ManifestError(Location(name, exc.line, exc.col), path_text, message)
    if all(doc is None for doc in docs):
        return ManifestError(Location(name, 1, 1), "", "file is empty: it holds no manifest")
    return source, docs
