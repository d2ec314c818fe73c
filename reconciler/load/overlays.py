"""Overlays: one environment's manifests as the base manifests plus that environment's patches.

An environment names overlay directories and ``exclude`` globs (``Kind/name``). Every YAML
document under its overlay directories whose ``kind`` and ``metadata.name`` match a base
manifest is a patch of it: mappings are merged key by key, scalars and lists are replaced, and
``null`` is kept (it means "reset to default", as in any manifest). A document that matches no
base manifest adds a resource to this environment only when it is a complete manifest on its
own (it states ``apiVersion``, and is then validated like any manifest); a partial one, without
``apiVersion``, is an error. ``exclude`` drops base resources (a plain ``Kind/name`` that drops
nothing is an error: a typo or a stale entry; a glob may match nothing yet). Patches apply in the order of the overlay
directories, then of their files, then of the documents in a file.

The merged document is then validated exactly like a manifest read from one file. Its
locator (``MergedLocator``) remembers which layer wrote each value, so every error names the
``file:line:col`` where the offending value was written: the overlay's when the overlay set
it. Merging is pure data: secret references (``fromEnv``/``fromFile``) stay references, and
nothing is resolved here.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.load.crossfile import Loader
from reconciler.load.manifestfiles import scan_manifest_paths
from reconciler.load.manifests import (
    FULL_POSITIONS,
    _Reader,
    error_order,
    load_resources,
    warn_deprecated_variables,
)
from reconciler.load.positions import DocumentLocator, MergedLocator
from reconciler.load.yamlsource import ManifestLimits
from reconciler.model.errors import Location, ManifestError, ManifestErrors
from reconciler.model.json import JsonObject, JsonValue
from reconciler.model.resources import KINDS, JsonPath, Resource, check_default_organization
from reconciler.model.secrets import is_reference

__all__ = ["Effective", "Layering", "load_environment", "load_layered"]


@dataclass(frozen=True)
class Layering:
    """How one environment's manifests differ from the base ones.

    ``overlays``: directories (or files) of patches and environment-only manifests;
    ``exclude``: ``Kind/name`` globs of base resources this environment does not have;
    ``overlays_at``/``exclude_at``: where each was set (``reconcile.yaml:14``), for messages.
    """

    overlays: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exclude_at: str = "reconcile.yaml"
    overlays_at: str = "reconcile.yaml"
    # The project's manifest paths: the base set the overlays patch. A run over fewer paths
    # keeps the effective manifests of its own files only (None: the run's paths are the base).
    base: tuple[str, ...] | None = None

    def __bool__(self) -> bool:
        return bool(self.overlays or self.exclude)


@dataclass(frozen=True)
class Effective:
    """One effective manifest of an environment: the merged document and where it came from."""

    kind: str
    name: str
    document: JsonObject = field(repr=False)
    files: tuple[str, ...]
    resource: Resource = field(repr=False)

    @property
    def key(self) -> str:
        """Return ``Kind/name``."""
        return f"{self.kind}/{self.name}"


@dataclass
class _Doc:
    """A parsed document on its way through the merge: its data, layers and origins."""

    data: Any  # a parsed document: checked to be a mapping by ``identity`` before it is merged
    layers: list[DocumentLocator]
    origins: dict[JsonPath, int] = field(default_factory=dict)

    def locator(self) -> DocumentLocator | MergedLocator:
        if len(self.layers) == 1:
            return self.layers[0]
        return MergedLocator(tuple(self.layers), dict(self.origins))


def identity(doc: JsonValue) -> tuple[str, str] | None:
    """Return ``(kind, metadata.name)`` of a parsed document, or None if it lacks either."""
    if not isinstance(doc, dict):
        return None
    kind, metadata = doc.get("kind"), doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(kind, str) and isinstance(name, str):
        return kind, name
    return None


def merge(
    base: JsonValue, patch: JsonValue, origins: dict[JsonPath, int], layer: int, path: JsonPath = ()
) -> JsonValue:
    """Return ``patch`` applied to ``base`` (neither changed), recording in ``origins`` the
    path of every value ``layer`` wrote: mappings merge key by key; anything else replaces.
    A secret reference (``{fromEnv: …}``/``{fromFile: …}``) is one value: it replaces, never
    merges with, the base's, and is the overlay's even when restated (a ``fromFile`` path is
    read beside the file that wrote it). Any other value restated unchanged keeps its origin (a patch's own ``kind``
    and ``metadata.name``)."""
    if not (isinstance(base, dict) and isinstance(patch, dict)) or is_reference(patch):
        if type(base) is type(patch) and base == patch and not is_reference(patch):
            return base  # restated (kind, metadata.name): its origin stays where it was
        for below in [k for k in origins if k[: len(path)] == path and len(k) > len(path)]:
            del origins[below]  # what an earlier layer wrote below here is gone
        origins[path] = layer
        return _copy(patch)
    out = dict(base)
    for key, value in patch.items():
        here = (*path, key)
        if key in base:
            out[key] = merge(base[key], value, origins, layer, here)
        else:
            out[key] = merge(None, value, origins, layer, here)
    return out


def _copy(value: JsonValue) -> JsonValue:
    """Return a copy of parsed YAML data (mappings, lists, scalars): deepcopy's result, faster."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _matches(pattern: str, key: str) -> bool:
    return fnmatch.fnmatchcase(key, pattern)


def _similar(key: str, keys: Sequence[str]) -> str:
    """Return `` (did you mean Kind/name?)`` for the closest key of the same kind, or ''."""
    import difflib

    kind, _, name = key.partition("/")
    names = [k.partition("/")[2] for k in keys if k.partition("/")[0] == kind]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {kind}/{close[0]}?)" if close else ""


class _Layerer:
    """Reads base and overlay files and merges them; records every problem on the reader."""

    def __init__(self, reader: _Reader, layering: Layering) -> None:
        self.reader = reader
        self.layering = layering
        self.excluded: set[tuple[str, str]] = set()

    def error(self, at: Location, path: str, message: str) -> None:
        self.reader.records.append(ManifestError(at, path, message))

    def read(self, files: Sequence[str]) -> list[_Doc]:
        docs: list[_Doc] = []
        for path in files:
            read = self.reader.read_source(path)
            if read is None:
                continue
            source, parsed = read
            docs.extend(
                _Doc(doc, [DocumentLocator(source, i)])
                for i, doc in enumerate(parsed)
                if doc is not None
            )
        return docs

    def exclude(self, base: list[_Doc]) -> list[_Doc]:
        keys = {id(doc): identity(doc.data) for doc in base}
        kept: list[_Doc] = []
        used: set[str] = set()
        for doc in base:
            ident = keys[id(doc)]
            key = f"{ident[0]}/{ident[1]}" if ident else None
            hits = [p for p in self.layering.exclude if key is not None and _matches(p, key)]
            used.update(hits)
            if not hits:
                kept.append(doc)
            elif ident is not None:
                self.excluded.add(ident)
        known = sorted(f"{i[0]}/{i[1]}" for i in keys.values() if i)
        for pattern in self.layering.exclude:
            # A glob may match nothing yet (Dashboard/scratch-*); a plain name that matches
            # nothing is a typo or a stale entry.
            if pattern not in used and not any(c in pattern for c in "*?["):
                hint = _similar(pattern, known)
                self.error(
                    Location(self.layering.exclude_at),
                    "exclude",
                    f"{pattern!r} matches no base manifest{hint}: remove it, or fix the "
                    "Kind/name glob",
                )
        return kept

    def patch(self, base: list[_Doc], overlays: list[_Doc]) -> list[_Doc]:
        by_key: dict[tuple[str, str], _Doc] = {}
        for doc in base:
            ident = identity(doc.data)
            if ident is not None:
                by_key.setdefault(ident, doc)
        added: list[_Doc] = []
        for patch in overlays:
            ident = identity(patch.data)
            layer = patch.layers[0]
            if ident is None:
                self.error(
                    layer.locate(()),
                    "",
                    "an overlay document needs kind and metadata.name (the manifest it patches, "
                    "or the one it adds)",
                )
                continue
            target = by_key.get(ident)
            if target is not None:
                target.layers.append(layer)
                target.data = merge(target.data, patch.data, target.origins, len(target.layers) - 1)
                continue
            known = sorted(f"{k}/{n}" for k, n in by_key if k == ident[0])
            hint = _similar(f"{ident[0]}/{ident[1]}", known)
            at = layer.locate(("metadata", "name"))
            if "apiVersion" not in patch.data and ident in self.excluded:
                self.error(
                    at,
                    "metadata.name",
                    f"{ident[0]}/{ident[1]} is excluded in this environment (exclude at "
                    f"{self.layering.exclude_at}), so this patch applies to nothing: remove "
                    "the patch or the exclude",
                )
                continue
            if "apiVersion" not in patch.data:
                self.error(
                    at,
                    "metadata.name",
                    f"{ident[0]}/{ident[1]} patches no base manifest{hint}; to add it to "
                    "this environment instead, write it as a complete manifest (with apiVersion)",
                )
                continue
            added.append(patch)
            by_key[ident] = patch  # a later overlay may patch what this one added
            if hint and not self.complete(ident[0], patch.data):
                self.error(
                    at,
                    "metadata.name",
                    f"{ident[0]}/{ident[1]} matches no base manifest{hint}, so it is read as a "
                    "manifest of its own",
                )
        return [*base, *added]

    @staticmethod
    def complete(kind: str, doc: dict[str, Any]) -> bool:
        """Tell whether ``doc`` is a valid manifest on its own."""
        if kind not in KINDS:
            return False
        from reconciler.load.schema import kind_schema

        return not any(True for _ in kind_schema(kind).errors(doc))


def load_layered(
    paths: Sequence[str | Path],
    layering: Layering,
    *,
    default_organization: str | None = None,
    limits: ManifestLimits | None = None,
    written: bool = True,
) -> list[Effective]:
    """Load ``paths`` with ``layering`` applied; return the effective manifests, validated.

    Raises ``ManifestErrors`` with every problem, each located where its value was written.
    ``written``: keep each document as merged (before defaults are filled in), for ``render``
    and ``compare``; without it, ``Effective.document`` is the validated one (planning).
    """
    if default_organization:
        check_default_organization(default_organization)
    warn_deprecated_variables()
    limits = ManifestLimits.from_env() if limits is None else limits
    overlay_files: list[str] = []
    errors: list[ManifestError] = []
    for directory in layering.overlays:
        found, problems = scan_manifest_paths([directory])
        overlay_files.extend(found)
        # An overlay directory with nothing in it yet is an environment without patches.
        if not Path(directory).is_dir():
            errors.extend(
                ManifestError(
                    e.location, e.path, f"{e.message} (an overlay named at {layering.overlays_at})"
                )
                for e in problems
            )
    base_files, base_errors = scan_manifest_paths(paths)
    base_files, selection = _with_project_base(base_files, layering.base)
    # An overlay directory inside a base directory is not part of the base.
    skip = set(overlay_files)
    base_files = [f for f in base_files if f not in skip]
    count = len(base_files) + len(overlay_files)
    reader = _Reader(default_organization, True, count <= FULL_POSITIONS, limits)
    layerer = _Layerer(reader, layering)
    base = layerer.exclude(layerer.read(base_files))
    merged = layerer.patch(base, layerer.read(overlay_files))
    if selection is not None:  # the run's own files: their manifests, patched; or added
        merged = [d for d in merged if os.path.realpath(d.layers[0].source.name) in selection]
    documents = [_copy(doc.data) if written else doc.data for doc in merged]
    locators = [doc.locator() for doc in merged]
    for doc, locator in zip(merged, locators, strict=True):
        reader.load_located(locator, doc.data)
    loader = Loader()
    loader.errors.extend([*errors, *base_errors])
    loader.take(reader.records)
    if loader.errors:
        raise ManifestErrors(sorted(loader.errors, key=error_order))
    by_locator = {id(r.locator): r for r in loader.resources}
    out: list[Effective] = []
    for document, locator in zip(documents, locators, strict=True):
        resource = by_locator.get(id(locator))
        # pragma: no cover - every clean document became a resource, so it is a mapping
        if resource is None or not isinstance(document, dict):  # pragma: no cover
            continue
        files = locator.files if isinstance(locator, MergedLocator) else (locator.source.name,)
        out.append(Effective(resource.kind, resource.name, document, files, resource))
    return out


def _with_project_base(
    files: list[str], base: tuple[str, ...] | None
) -> tuple[list[str], set[str] | None]:
    """Return the base files to patch and the run's own files (None: the run covers them all).

    A run over some of the project's manifests (``plan FILE --env NAME``) still patches the
    project's whole base set, so an overlay of a manifest it does not cover patches that
    manifest (and is then left out) instead of patching nothing.
    """
    if base is None:
        return files, None
    project, _problems = scan_manifest_paths(base)  # the run's own paths report their problems
    known = {os.path.realpath(f) for f in project}
    mine = {os.path.realpath(f) for f in files}
    if mine == known:
        return files, None
    return [*project, *(f for f in files if os.path.realpath(f) not in known)], mine


def load_environment(
    paths: Sequence[str | Path],
    *,
    organization: str | None = None,
    layering: Layering | None = None,
) -> list[Resource]:
    """Load for planning: the manifests in ``paths``, or with ``layering`` (an environment's
    overlays and excludes) that environment's effective manifests; raise ``ManifestErrors``."""
    if not layering:
        return load_resources(paths, default_organization=organization, positions=True)
    found = load_layered(paths, layering, default_organization=organization, written=False)
    return [e.resource for e in found]
