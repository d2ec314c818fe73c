"""Loading manifests: files and directories to validated ``Resource`` objects.

``load_resources`` finds and parses the manifest files (``reconciler.load.manifestfiles``:
bounded reads, recursive search, positions recorded as asked), checks ``apiVersion`` and
``kind``, validates each document against its kind's JSON Schema, then checks what a schema
cannot say (unique table mappings, unique private endpoint ids, unique ``metadata.name`` per
kind, a known organization, and one manifest per live object: one pipe id, one organization id,
one dashboard name). Every problem found in every file is collected and raised at once as one
``ManifestErrors``; each is located at ``file:line:col`` through a lazy locator, so a valid
file is parsed once and a file with a problem twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.load.crossfile import Loader, Named, Record
from reconciler.load.manifestfiles import read_manifest_file, scan_manifest_paths
from reconciler.load.positions import MergedLocator
from reconciler.load.yamlsource import DocumentLocator, ManifestLimits, SourceFile
from reconciler.model.cdc import CDC, ratio_error
from reconciler.model.endpoints import ENDPOINT, endpoint_type_errors
from reconciler.model.errors import ManifestError, ManifestErrors
from reconciler.model.fields import database_kind, field_mapping_problems, table_mapping_fields
from reconciler.model.json import JsonValue
from reconciler.model.resources import (
    API_VERSION,
    KINDS,
    JsonPath,
    Resource,
    check_default_organization,
    format_path,
)

__all__ = ["ManifestLimits", "load_manifests", "load_resources"]


# Up to this many files a plan records every position while parsing (under 10 MB).
FULL_POSITIONS = 2000
# The dashboards grid is 24 columns wide: a tile's x + w may not pass it.
GRID_COLUMNS = 24
# Once the number of forked reader processes; documented, so it is accepted (and ignored,
# with a deprecation line) for one release.
WORKERS_VARIABLE = "RECONCILE_LOAD_WORKERS"
_warned = False
ORG_MISSING = (
    "organizationId is not set: add spec.organizationId or pass --organization / "
    "RECONCILE_ORGANIZATION_ID"
)


class _Reader:
    """Reads files into records, in order: errors, and documents awaiting cross-file checks."""

    def __init__(
        self,
        default_organization: str | None,
        positions: bool,
        full_positions: bool,
        limits: ManifestLimits,
    ) -> None:
        self.default_organization = default_organization
        self.positions = positions
        self.full_positions = full_positions
        self.limits = limits
        self.records: list[Record] = []

    def read(self, paths: Sequence[str]) -> list[Record]:
        """Return the records of ``paths``, in order."""
        self.records = []
        for path in paths:
            self.load_file(path)
        records, self.records = self.records, []
        return records

    def error(self, locator: DocumentLocator | MergedLocator, path: JsonPath, message: str) -> None:
        self.records.append(ManifestError(locator.locate(path), format_path(path), message))

    def load_file(self, path: str) -> None:
        read = self.read_source(path)
        if read is not None:
            source, docs = read
            for index, doc in enumerate(docs):
                if doc is not None:
                    self.load_document(source, index, doc)

    def read_source(self, path: str) -> tuple[SourceFile, list[JsonValue]] | None:
        """Parse one file into its source and documents (None, with the error recorded, if it
        cannot be read, is not YAML or holds no manifest)."""
        read = read_manifest_file(
            path, self.limits, positions=self.positions, full_positions=self.full_positions
        )
        if isinstance(read, ManifestError):
            self.records.append(read)
            return None
        return read

    def load_document(self, source: SourceFile, index: int, doc: Any) -> None:
        self.load_located(DocumentLocator(source, index), doc)

    def load_located(self, locator: DocumentLocator | MergedLocator, doc: Any) -> None:
        """Check one document (located by ``locator``) and record it or its errors."""
        if not isinstance(doc, dict):
            from reconciler.load.schemaerrors import describe

            got = describe(doc)
            self.error(
                locator, (), f"a manifest must be a mapping (apiVersion, kind, ...), got {got}"
            )
            return
        count = len(self.records)
        version = doc.get("apiVersion")
        if "apiVersion" not in doc:
            self.error(locator, (), f"missing required field 'apiVersion' (use {API_VERSION})")
        elif version != API_VERSION:
            self.error(
                locator, ("apiVersion",), f"unknown apiVersion {version!r} (known: {API_VERSION})"
            )
        kind = doc.get("kind")
        if "kind" not in doc:
            self.error(locator, (), f"missing required field 'kind' (one of {', '.join(KINDS)})")
            return
        if kind not in KINDS:
            from reconciler.load.schema import suggest

            hint = suggest(kind, KINDS) if isinstance(kind, str) else ""
            self.error(
                locator, ("kind",), f"unknown kind {kind!r}{hint} (known: {', '.join(KINDS)})"
            )
            return
        from reconciler.load.schema import kind_schema

        schema = kind_schema(kind)
        # apiVersion was judged above: the schema sees the known one, so it is not reported twice.
        for path, message in schema.errors({**doc, "apiVersion": API_VERSION}):
            self.error(locator, path, message)
        if len(self.records) > count:
            return
        schema.normalise(doc)
        spec = doc["spec"]
        self.check_spec(locator, kind, spec)
        clean = len(self.records) == count
        metadata = doc["metadata"]
        renamed = metadata.get("renamedFrom")
        self.records.append(Named(locator, kind, metadata["name"], spec, clean, renamed))

    def check_spec(
        self, locator: DocumentLocator | MergedLocator, kind: str, spec: dict[str, Any]
    ) -> None:
        if kind in ("Pipe", "Organization", ENDPOINT, CDC) and "organizationId" not in spec:
            if self.default_organization:
                spec["organizationId"] = self.default_organization
            else:
                self.error(locator, ("spec",), ORG_MISSING)
        if kind == "Pipe" and "pipeId" not in spec and "name" not in spec:
            self.error(
                locator,
                ("spec",),
                "spec.name is required when spec.pipeId is not given: without an id the pipe "
                "is bound by its name (or created with it)",
            )
        if kind == "Pipe":
            source = spec.get("source", {})
            database = database_kind(source)
            mappings = source.get(database, {}).get("tableMappings", []) if database else []
            seen: dict[tuple[str, ...], int] = {}
            for i, m in enumerate(mappings):
                key = tuple(m[k] for k in table_mapping_fields(m))
                if key in seen:
                    at = locator.locate(
                        ("spec", "source", str(database), "tableMappings", seen[key])
                    )
                    self.error(
                        locator,
                        ("spec", "source", str(database), "tableMappings", i),
                        f"duplicate table mapping {key[0]}.{key[1]} -> {key[2]}"
                        f" (also at line {at.line})",
                    )
                seen.setdefault(key, i)
            self.check_field_mappings(locator, spec)
        if kind == "Dashboard":
            self.check_grid(locator, spec)
        if kind == ENDPOINT:
            for path, message in endpoint_type_errors(spec):
                self.error(locator, ("spec", *path), message)
        if kind == CDC and (ratio := ratio_error(spec)) is not None:
            self.error(locator, ("spec", "replicaMemoryGb"), ratio)
        if kind == "Organization":
            ids: dict[str, int] = {}
            for i, endpoint in enumerate(spec.get("privateEndpoints", [])):
                if endpoint["id"] in ids:
                    at = locator.locate(("spec", "privateEndpoints", ids[endpoint["id"]]))
                    self.error(
                        locator,
                        ("spec", "privateEndpoints", i, "id"),
                        f"duplicate private endpoint id '{endpoint['id']}' (also at line {at.line})",
                    )
                ids.setdefault(endpoint["id"], i)

    def check_grid(self, locator: DocumentLocator | MergedLocator, spec: dict[str, Any]) -> None:
        """A tile must end inside the 24-column grid: the schema bounds x and w only one by one."""
        for i, tile in enumerate(spec.get("tiles", [])):
            x, w = tile.get("x"), tile.get("w")
            if isinstance(x, int) and isinstance(w, int) and x + w > GRID_COLUMNS:
                self.error(
                    locator,
                    ("spec", "tiles", i),
                    f"tile '{tile.get('name')}' ends past the grid: x + w = {x} + {w} = {x + w}, "
                    f"but the dashboard has {GRID_COLUMNS} columns (x + w must be at most "
                    f"{GRID_COLUMNS})",
                )

    def check_field_mappings(
        self, locator: DocumentLocator | MergedLocator, spec: dict[str, Any]
    ) -> None:
        """When a manifest states both the columns and the mappings, hold them to the
        service's rule here (the plan also checks them against the live columns)."""
        columns = spec.get("destination", {}).get("columns")
        mappings = spec.get("fieldMappings")
        if not isinstance(columns, list) or not isinstance(mappings, list):
            return
        names = [str(c["name"]) for c in columns]
        targets = [str(m["destinationField"]) for m in mappings]
        for index, problem in field_mapping_problems(names, targets):
            at = ("spec", "fieldMappings") if index is None else ("spec", "fieldMappings", index)
            self.error(locator, (*at, "destinationField") if index is not None else at, problem)


def load_resources(
    paths: Sequence[str | Path],
    *,
    default_organization: str | None = None,
    positions: bool = False,
    limits: ManifestLimits | None = None,
) -> list[Resource]:
    """Load, validate and return every resource in ``paths``; raise ManifestErrors with ALL problems found."""
    # positions=True is for plans, whose actions name manifest lines. Up to FULL_POSITIONS
    # files, every position is recorded in the same parse (cheapest when many fields change).
    # Beyond, only each document's and its metadata.name's are, and other positions come from
    # parsing that one file again on first use: a plan of 10,000 mostly unchanged manifests
    # keeps no full position maps (about 4.6 KB a manifest).
    warn_deprecated_variables()
    if default_organization:
        check_default_organization(default_organization)
    limits = ManifestLimits.from_env() if limits is None else limits
    files, errors = scan_manifest_paths(paths)
    reader = _Reader(default_organization, positions, len(files) <= FULL_POSITIONS, limits)
    loader = Loader()
    loader.errors.extend(errors)
    loader.take(reader.read(files))
    if loader.errors:
        raise ManifestErrors(sorted(loader.errors, key=error_order))
    # Files are read in sorted order of their names, documents in order within a file:
    # the resources are already sorted by (file, index).
    return loader.resources


def warn_deprecated_variables() -> None:
    """Say once per process, on stderr, that ``RECONCILE_LOAD_WORKERS`` is set but ignored."""
    global _warned
    if _warned or WORKERS_VARIABLE not in os.environ:
        return
    _warned = True
    sys.stderr.write(
        f"warning: {WORKERS_VARIABLE} is deprecated and has no effect: manifests are read in "
        "one process; it will be removed in the next release\n"
    )


def error_order(error: ManifestError) -> tuple[str, int, int, str]:
    loc = error.location
    return (loc.file, loc.line, loc.col, error.path)


def load_manifests(
    paths: Sequence[str | Path], *, organization: str | None = None
) -> list[Resource]:
    """Load the manifests in ``paths`` for planning (every field located); raise ``ManifestErrors``."""
    return load_resources(paths, default_organization=organization, positions=True)
