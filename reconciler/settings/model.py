"""The parts of resolved settings: a value with its source, an env file read, a request.

``Resolved`` is one setting's value and where it came from (``Source``, and the words
``reconcile config`` shows); ``SettingsRequest`` is what a resolution was asked, kept so that
``Settings.reload`` can ask it again; ``EnvFile`` says which variables an env file set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from reconciler.settings.table import Setting

if TYPE_CHECKING:
    from reconciler.load.project import ProjectFile

__all__ = ["NO_PATHS", "Resolved", "SettingsRequest", "Source"]


# Said when a command has no manifests to work on (the project file may name them).
NO_PATHS = "no manifests: give PATHS, or name them under `manifests:` in reconcile.yaml"


LAZY_DEFAULT: Any = object()  # a built-in default not read yet (``Resolved.value``)


class Source(StrEnum):
    """Where a value came from, in order of precedence."""

    FLAG = "flag"  # an explicit value: a flag or argument, or a Python caller's
    ENVIRONMENT = "environment"  # environments.NAME.… of the project file
    ENV = "env"  # a variable of the process environment
    ENV_FILE = "env file"  # a variable read from an env file
    PROJECT = "project file"  # a top-level key of the project file
    DEFAULT = "default"


@dataclass(frozen=True)
class Resolved:
    """One setting's value, its source, and the words ``reconcile config`` shows for it."""

    setting: Setting
    given: object = field(repr=False)  # the value; for a default, worked out when first read
    source: Source
    where: str  # "flag --state", "env RECONCILE_STATE", "reconcile.yaml:3", "default"
    problem: str | None = None  # e.g. an environment's credential whose variable is unset

    @property
    def value(self) -> object:
        """Return the value (a built-in default is read from its owner only when asked for:
        the client's defaults live beside the HTTP stack, which ``validate`` never loads)."""
        if self.source is Source.DEFAULT and self.given is LAZY_DEFAULT:
            from reconciler.settings.table import default_of

            return default_of(self.setting)
        return self.given

    def shown(self) -> str:
        """Return the value for display; a secret is never shown."""
        value = self.value
        if value is None or value == () or value == "":
            return "-"
        if self.setting.secret:
            return "****"
        if self.setting.param == "state_path":
            from reconciler.state.backend import redact_address

            return redact_address(str(value))  # a libpq URL may carry a password
        if isinstance(value, list | tuple):
            return ", ".join(str(v) for v in value)
        return str(value)


@dataclass(frozen=True, slots=True)
class EnvFile:
    """One env file read: which variables it added and which were already set (kept)."""

    path: str
    found: bool
    loaded: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class SettingsRequest:
    """What a resolution was asked: explicit values and where to look (``reload`` repeats it)."""

    explicit: Mapping[str, object] = field(default_factory=dict, repr=False)  # may hold a secret
    config: str | None = None  # the project file (else RECONCILE_CONFIG, else found upwards)
    env_file: str | None = None  # an env file read before the project's
    environment: str | None = None  # else RECONCILE_ENV, else the project's defaultEnvironment
    environment_from: str = "--env"  # how the environment was asked for, for messages
    cwd: str | None = None  # where to look for the project file (default: the current dir)
    environ: Mapping[str, str] | None = field(default=None, repr=False)  # default: os.environ


def where_in_project(project: ProjectFile, key: tuple[str | int, ...]) -> str:
    """Return ``FILE:LINE`` of ``key`` in the project file, plus the key when it is nested."""
    line = project.where(key)
    return f"{line}: {'.'.join(str(k) for k in key)}" if key[0] == "environments" else line
