"""The project file, ``reconcile.yaml``: found from a directory upwards, validated, located.

The project file holds what every run in a repository shares (manifest paths, the state
location and workspace, the organization, base URLs, rates, parallelism, an env file). It is
validated against ``schemas/project.schema.json`` like a manifest: every problem at once, as
``FILE:LINE:COL: PATH: MESSAGE``. Credentials are refused with a message saying where they
go instead, and their values are never echoed; under ``environments:`` they may only be
secret references (``{fromEnv: NAME}``, ``{fromFile: PATH}``), and ``defaultEnvironment``
must name one of them. Resolving the values (``reconciler.settings``) is not this module's. Relative paths in the file are relative to
the file's own directory; ``ProjectFile.path_value`` turns them into paths usable from the
current directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from reconciler.load.schema import compiled_check, schema_dir, suggest
from reconciler.load.schemaerrors import explain
from reconciler.load.yamlsource import SourceFile, YamlSyntaxError, parse_located
from reconciler.model.errors import Location, ManifestError, ManifestErrors
from reconciler.model.json import JsonObject, JsonValue
from reconciler.model.resources import JsonPath, format_path

__all__ = ["ProjectFile", "display_path", "find_project_file", "load_project_file"]


FILE_NAME = "reconcile.yaml"
SCHEMA_FILE = "project.schema.json"
# Where a credential goes instead of the project file (a file kept in git).
CREDENTIALS = {
    "keyId": "RECONCILE_KEY_ID",
    "keySecret": "RECONCILE_KEY_SECRET",
    "dashboardsToken": "RECONCILE_DASHBOARDS_TOKEN",
}

_ENVIRONMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# What a value that fails a pattern should look like, said plainly.
_PATTERN_HINTS: dict[str, str] = {
    "rates": "is not a request budget: write N/SECONDS (e.g. 10/10) or none",
    "baseUrl": "is not an http:// or https:// URL",
    "dashboardsUrl": "is not an http:// or https:// URL",
    "workspace": "is not a workspace name: letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit",
    "exclude": "is not a KIND/NAME glob (e.g. Dashboard/staging-*)",
}


@dataclass(frozen=True)
class ProjectFile:
    """A loaded, valid project file: its path, values and the line of every key."""

    path: Path
    values: JsonObject = field(default_factory=dict)
    lines: dict[JsonPath, int] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        """Return the directory relative paths in the file are resolved from."""
        return self.path.parent

    def get(self, key: JsonPath) -> JsonValue:
        """Return the value at ``key`` (a path of keys), or None when absent."""
        value: JsonValue = self.values
        for part in key:
            if not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def where(self, key: JsonPath) -> str:
        """Return ``FILE:LINE`` of ``key`` for messages and ``reconcile config``."""
        line = self.lines.get(key)
        shown = display_path(self.path)
        return f"{shown}:{line}" if line else shown

    def path_value(self, value: str) -> str:
        """Return a path from the file as seen from the current directory (URLs unchanged)."""
        if "://" in value or os.path.isabs(value):
            return value
        return display_path(self.directory / value)


def display_path(path: Path) -> str:
    """Return ``path`` relative to the current directory when that is shorter, else absolute."""
    absolute = path.resolve()
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive
        return str(absolute)
    return relative if len(relative) < len(str(absolute)) else str(absolute)


def find_project_file(start: Path | None = None) -> Path | None:
    """Return the nearest ``reconcile.yaml`` from ``start`` (default: cwd) upwards, or None."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / FILE_NAME
        if candidate.is_file():
            return candidate
    return None


@cache
def project_schema() -> JsonObject:
    """Return the published JSON Schema of the project file."""
    loaded: JsonObject = json.loads((schema_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
    return loaded


def load_project_file(path: Path) -> ProjectFile:
    """Read and validate a project file; raise ``ManifestErrors`` naming file:line:col."""
    name = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        error = ManifestError(Location(name), "", f"cannot read: {exc.strerror}")
        raise ManifestErrors([error]) from None
    try:
        docs, indexes = parse_located(data)
    except YamlSyntaxError as exc:
        error = ManifestError(Location(name, exc.line, exc.col), "", exc.message)
        raise ManifestErrors([error]) from None
    source = SourceFile(name, data, indexes)
    if len(docs) > 1:
        where = source.locate(1, ())
        raise ManifestErrors([ManifestError(where, "", "a project file holds one document")])
    doc = docs[0] if docs else None
    if doc is None:
        doc = {}
    errors = sorted(
        (
            ManifestError(source.locate(0, key), format_path(key), message)
            for key, message in project_errors(doc)
        ),
        key=lambda e: (e.location.line, e.location.col),
    )
    if errors:
        raise ManifestErrors(errors)
    lines = {key: pos[0] for key, pos in source.positions(0).items()}
    # The schema holds the file to one object: the isinstance only tells mypy so.
    return ProjectFile(path.resolve(), doc if isinstance(doc, dict) else {}, lines)


def project_errors(doc: JsonValue) -> list[tuple[JsonPath, str]]:
    """Return ``(path, message)`` for every problem of a parsed project file."""
    out: list[tuple[JsonPath, str]] = []
    if isinstance(doc, dict):
        for name, variable in CREDENTIALS.items():
            if name in doc:
                out.append(
                    (
                        (name,),
                        f"credentials do not belong in the project file (it is kept in git): "
                        f"set {variable} in the environment or in the env file",
                    )
                )
        doc = {k: v for k, v in doc.items() if k not in CREDENTIALS}
        doc, found = _environment_errors(doc)
        out.extend(found)
    schema = project_schema()
    if _fast_check(schema)(doc):
        return out
    # jsonschema (~50 ms to import) is the authority on messages, so only a file that fails
    # the compiled check pays for it, as manifests do (``reconciler.load.schema``).
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    for key, message in explain(validator.iter_errors(doc)):
        # A top-level key's hint (``rates``), else the field's own, inside an environment too.
        names = [str(k) for k in key if isinstance(k, str)]
        hint = (_PATTERN_HINTS.get(names[0]) or _PATTERN_HINTS.get(names[-1])) if names else None
        if hint and "does not match the pattern" in message:
            message = message.split(" does not match", 1)[0] + " " + hint
        out.append((key, message))
    return out


def _environment_errors(doc: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[JsonPath, str]]]:
    """Refuse literal credentials in ``environments:`` and an unknown ``defaultEnvironment``.

    Return the document without the refused values (so the schema does not report them a
    second time) and the problems found; a value is never echoed.
    """
    out: list[tuple[JsonPath, str]] = []
    environments = doc.get("environments")
    if isinstance(environments, dict):
        cleaned: dict[str, Any] = {}
        for name, entry in environments.items():
            if not _ENVIRONMENT_NAME.match(str(name)):
                out.append(
                    (
                        ("environments", name),
                        f"{str(name)!r} is not an environment name: letters, digits, '.', '_' "
                        "and '-', at most 64, starting with a letter or digit (it is also the "
                        "environment's default workspace)",
                    )
                )
            if isinstance(entry, dict):
                entry = dict(entry)
                for key, variable in CREDENTIALS.items():
                    if key in entry and not _is_reference(entry[key]):
                        out.append(
                            (
                                ("environments", name, key),
                                "a secret reference takes exactly one of fromEnv or fromFile"
                                if isinstance(entry[key], dict)
                                else "credentials are never written in the project file (it is "
                                "kept in git): write {fromEnv: NAME} or {fromFile: PATH}, or set "
                                f"{variable} in this environment's envFile",
                            )
                        )
                        del entry[key]
            cleaned[name] = entry
        doc = {**doc, "environments": cleaned}
    default = doc.get("defaultEnvironment")
    if isinstance(default, str) and isinstance(environments, dict) and default not in environments:
        hint = suggest(default, environments)
        out.append(
            (
                ("defaultEnvironment",),
                f"{default!r} is not one of the environments{hint}; defined: "
                f"{', '.join(sorted(map(str, environments))) or 'none'}",
            )
        )
    elif isinstance(default, str) and not isinstance(environments, dict):
        out.append((("defaultEnvironment",), "names an environment, but `environments:` is absent"))
    return doc, out


def _is_reference(value: Any) -> bool:
    return (
        isinstance(value, dict) and len(value) == 1 and ("fromEnv" in value or "fromFile" in value)
    )


def _fast_check(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """Return the compiled validity check of the project schema."""
    return compiled_check(schema, {SCHEMA_FILE: schema})
