"""Resolved settings: each value with where it came from, and what a run builds from them.

``Settings`` is immutable: the values of one resolution (``reconciler.settings.resolve``), the
project file and environment they came from, the env files read, and the variables as the run
sees them (``environ``: the process environment with the env files' variables added, never
written back into ``os.environ``). From it a caller builds the client's ``ApiConfig`` and the
plan's ``Scope``; ``reload`` resolves the same request again (a long-running command on SIGHUP).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from reconciler.model.errors import ConfigError
from reconciler.settings.environments import Environment
from reconciler.settings.table import SETTINGS, Setting, setting_named

if TYPE_CHECKING:
    from reconciler.client.config import ApiConfig
    from reconciler.load.project import ProjectFile
    from reconciler.plan.run import Scope

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
    given: Any = field(repr=False)  # the value; for a default, worked out when first read
    source: Source
    where: str  # "flag --state", "env RECONCILE_STATE", "reconcile.yaml:3", "default"
    problem: str | None = None  # e.g. an environment's credential whose variable is unset

    @property
    def value(self) -> Any:
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


@dataclass(frozen=True)
class EnvFile:
    """One env file read: which variables it added and which were already set (kept)."""

    path: str
    found: bool
    loaded: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


@dataclass(frozen=True)
class SettingsRequest:
    """What a resolution was asked: explicit values and where to look (``reload`` repeats it)."""

    explicit: Mapping[str, Any] = field(default_factory=dict)
    config: str | None = None  # the project file (else RECONCILE_CONFIG, else found upwards)
    env_file: str | None = None  # an env file read before the project's
    environment: str | None = None  # else RECONCILE_ENV, else the project's defaultEnvironment
    environment_from: str = "--env"  # how the environment was asked for, for messages
    cwd: str | None = None  # where to look for the project file (default: the current dir)
    environ: Mapping[str, str] | None = field(default=None, repr=False)  # default: os.environ


@dataclass(frozen=True)
class Settings:
    """The settings of one run (or one environment of a run), each with its provenance."""

    request: SettingsRequest
    values: Mapping[str, Resolved]  # by parameter name (``state_path``)
    project: ProjectFile | None = None
    environment: Environment | None = None
    environments: Mapping[str, Environment] = field(default_factory=dict)
    env_files: tuple[EnvFile, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    env_file_values: Mapping[str, str] = field(default_factory=dict, repr=False)

    # -- reading ----------------------------------------------------------------------------

    def get(self, name: str) -> Any:
        """Return the value of a setting named by parameter (``state_path``) or key."""
        return self.values[setting_named(name).param].value

    def resolved(self, name: str) -> Resolved:
        """Return a setting's value with its source."""
        return self.values[setting_named(name).param]

    def rows(self) -> list[Resolved]:
        """Return every resolved setting in the table's order."""
        return [self.values[s.param] for s in SETTINGS if s.param in self.values]

    @property
    def manifests(self) -> tuple[str, ...]:
        """Return the manifest paths (explicit, else the project file's)."""
        return tuple(self.values["paths"].value or ())

    @property
    def workspace(self) -> str:
        """Return the state workspace."""
        return str(self.values["workspace"].value)

    @property
    def organization(self) -> str | None:
        """Return the default organization id for manifests that omit it."""
        value = self.values["organization"].value
        return str(value) if value else None

    @property
    def overlays(self) -> tuple[str, ...]:
        """Return the environment's overlay directories (none without an environment)."""
        return self.environment.overlays if self.environment else ()

    @property
    def exclude(self) -> tuple[str, ...]:
        """Return the environment's ``Kind/name`` globs to leave out."""
        return self.environment.exclude if self.environment else ()

    @property
    def environment_name(self) -> str | None:
        """Return the name of the chosen environment, if any."""
        return self.environment.name if self.environment else None

    def env_file_of(self, variable: str) -> str | None:
        """Return the env file that set ``variable``, or None."""
        for env_file in self.env_files:
            if variable in env_file.loaded:
                return env_file.path
        return None

    # -- building ---------------------------------------------------------------------------

    def require_environment(self) -> None:
        """Raise ``ConfigError`` when the project has environments and none was chosen."""
        from reconciler.load.project import display_path
        from reconciler.settings.environments import needs_one

        if self.environments and self.environment is None:
            assert self.project is not None
            raise needs_one(self.environments, display_path(self.project.path))

    def state_address(self, paths: tuple[str, ...] | None = None) -> tuple[str, str | None]:
        """Return the state location and a deprecation warning (a legacy default file) or None."""
        given = self.values["state_path"].value
        if given:
            return str(given), None
        from reconciler.state.local import resolve_state_path

        path, warning = resolve_state_path(self.manifests if paths is None else paths)
        return str(path), warning

    def scope(self, paths: tuple[str, ...] | None = None) -> Scope:
        """Return the plan's ``Scope`` (``paths`` overrides the manifests, e.g. a saved plan's)."""
        from reconciler.plan.run import Scope

        chosen = self.manifests if paths is None else paths
        if not chosen:
            raise ConfigError(NO_PATHS)
        address, _warning = self.state_address(chosen)
        return Scope(chosen, address, self.workspace, self.organization)

    def api_config(self, *, insecure: bool = False) -> ApiConfig:
        """Return the client's configuration (``ApiConfig.check`` is the caller's, as before)."""
        from reconciler.settings.apiconfig import api_config_of

        for param in ("key_id", "key_secret", "dashboards_token"):
            problem = self.values[param].problem if param in self.values else None
            if problem:
                raise ConfigError(problem)
        return api_config_of({p: r.value for p, r in self.values.items()}, insecure=insecure)

    def override(self, explicit: Mapping[str, Any]) -> Settings:
        """Return these settings with more explicit values (flags) on top; no file is read."""
        from reconciler.settings.resolve import apply_explicit

        return apply_explicit(self, explicit)

    def reload(self) -> Settings:
        """Resolve the same request again: re-read the project file, env files and variables."""
        from reconciler.settings.resolve import resolve_request

        return resolve_request(self.request)


def where_in_project(project: ProjectFile, key: tuple[str | int, ...]) -> str:
    """Return ``FILE:LINE`` of ``key`` in the project file, plus the key when it is nested."""
    line = project.where(key)
    return f"{line}: {'.'.join(str(k) for k in key)}" if key[0] == "environments" else line
