"""Desired resources: what the manifests say, as typed domain objects.

A ``Resource`` is one manifest document after validation: its kind, its ``metadata.name``,
its ``spec`` as plain JSON data (secret fields still hold ``{fromEnv: …}`` / ``{fromFile: …}``
references), and a locator that turns a JSON path inside the document into ``file:line:col``.
The locator may be lazy: the loader parses with the fast C loader and only pays for positions
when a message needs one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from reconciler.model.errors import ConfigError, Location
from reconciler.model.json import JsonMapping

__all__ = [
    "API_VERSION",
    "KINDS",
    "JsonPath",
    "Location",
    "PathPart",
    "Resource",
    "check_default_organization",
    "check_form",
    "format_path",
]


KINDS: tuple[str, ...] = (
    "Pipe",
    "Organization",
    "Dashboard",
    "ReversePrivateEndpoint",
    "CdcScaling",
)
API_VERSION = "reconcile/v1"

PathPart = str | int
JsonPath = tuple[PathPart, ...]

# The schemas' uuid form (common.schema.json `$defs.uuid`): ids are inserted into request
# paths as given, so one that did not come through a schema is checked against it.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def check_form(value: str, form: re.Pattern[str], subject: str, problem: str) -> str:
    """Return ``value`` if ``form`` matches all of it; else raise ``ConfigError`` saying so."""
    if not form.fullmatch(value):
        raise ConfigError(f"{subject}{value!r} {problem}")
    return value


def check_default_organization(value: str) -> str:
    """Return ``value`` if it is a UUID; else raise ConfigError naming the flag and variable."""
    return check_form(
        value,
        _UUID,
        "--organization / RECONCILE_ORGANIZATION_ID: ",
        "is not a valid UUID (expected the form 0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61)",
    )


class Locator(Protocol):
    """Finds where a JSON path of one document sits in its file."""

    def locate(self, path: Sequence[PathPart]) -> Location:
        """Return the location of ``path`` (or of its nearest present parent)."""
        ...


@runtime_checkable
class Releasable(Protocol):
    """A locator that caches position maps and can drop them when no more are needed."""

    def release(self) -> None:
        """Drop cached position data; ``locate`` still works (it may re-read the source)."""
        ...


@dataclass(frozen=True)
class FixedLocator:
    """A locator that answers one location for every path (for generated resources)."""

    location: Location

    def locate(self, path: Sequence[PathPart]) -> Location:
        """Return the fixed location."""
        return self.location


@dataclass(frozen=True)
class Resource:
    """One desired resource from one manifest document."""

    kind: str
    name: str
    spec: JsonMapping
    file: str
    index: int = 0
    locator: Locator = field(default=FixedLocator(Location("<memory>")), compare=False, repr=False)
    # ``metadata.renamedFrom``: the metadata.name whose state record this manifest takes over.
    renamed_from: str | None = None

    @property
    def key(self) -> str:
        """Return ``Kind/name``, the resource's unique address in plans and state."""
        return f"{self.kind}/{self.name}"

    def locate(self, *path: PathPart) -> Location:
        """Return file:line:col of a field given as a path under the document root."""
        return self.locator.locate(path)

    def locate_spec(self, *path: PathPart) -> Location:
        """Return file:line:col of a field given as a path under ``spec``."""
        return self.locator.locate(("spec", *path))


def format_path(path: Sequence[PathPart]) -> str:
    """Render a JSON path as ``spec.source.kafka.topics[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
