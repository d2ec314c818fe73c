"""Settings and their resolution: explicit > environment's value > variable > project > default.

``Settings`` is immutable: the values of one resolution, each with its source, the project file
and environment they came from, the env files read, and the variables as the run sees them
(``environ``: the process environment with the env files' variables added). From it a caller
builds the client's ``ApiConfig`` and the plan's ``Scope``; ``reload`` resolves the same
request again (a long-running command on SIGHUP), ``override`` puts explicit values on top.

``resolve`` finds the project file (``config``, else ``RECONCILE_CONFIG``, else the nearest
``reconcile.yaml`` from ``cwd`` upwards), reads the env files (``env_file``, then the project's
``envFile``, then the chosen environment's ``envFile``; none overrides a variable already set),
chooses the environment (``environment``, else ``RECONCILE_ENV``, else ``defaultEnvironment``)
and resolves every setting of ``reconciler.settings.table`` with its provenance. Nothing is
written to ``os.environ``: the variables a run sees are ``Settings.environ``.

Without environments the order is the documented flag > variable > project file > default. A
value an environment writes for itself (its state, organization, URLs, credentials, workspace)
sits just below an explicit value: it is more specific than a variable exported for every
environment, so one shell or CI job can run several environments without sending one
environment's key to another.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.model.errors import ConfigError
from reconciler.model.secretfiles import SecretFiles
from reconciler.settings.environments import (
    DEFAULT_ENVIRONMENT,
    ENV_VARIABLE,
    Environment,
    choose,
    parse_environments,
    secret_files_of,
)
from reconciler.settings.model import (
    NO_PATHS,
    EnvFile,
    Resolved,
    SettingsRequest,
    Source,
)
from reconciler.settings.precedence import resolve_all
from reconciler.settings.sources import project_file, project_name, read_env_file
from reconciler.settings.table import SETTINGS, setting_named

if TYPE_CHECKING:
    from reconciler.client.config import ApiConfig
    from reconciler.load.overlays import Layering
    from reconciler.load.project import ProjectFile
    from reconciler.plan.scope import Scope
    from reconciler.state.backend import Backend

__all__ = ["Settings", "list_environments", "resolve", "resolve_request"]


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

    def get(self, name: str) -> object:
        """Return the value of a setting named by parameter (``state_path``) or key."""
        return self.values[setting_named(name).param].value

    def seconds(self, name: str) -> float:
        """Return the value of a setting of seconds (``lock_timeout``) as a number."""
        value = self.get(name)
        assert isinstance(value, int | float), name  # the table's kind makes it one
        return float(value)

    def resolved(self, name: str) -> Resolved:
        """Return a setting's value with its source."""
        return self.values[setting_named(name).param]

    def rows(self) -> list[Resolved]:
        """Return every resolved setting in the table's order."""
        return [self.values[s.param] for s in SETTINGS if s.param in self.values]

    @property
    def manifests(self) -> tuple[str, ...]:
        """Return the manifest paths (explicit, else the project file's)."""
        paths = self.values[
            "paths"
        ].value  # a tuple of str whatever its source (see precedence._resolve_one)
        return tuple(str(p) for p in paths) if isinstance(paths, tuple | list) else ()

    @property
    def project_manifests(self) -> tuple[str, ...] | None:
        """Return the manifest paths the project file names (None: it names none).

        A run over fewer paths does not see the whole project: renames of ``metadata.name``
        are then not inferred, and ``--prune`` deletes no pipe (``Scope.complete_kinds``).
        """
        value = self.project.get(("manifests",)) if self.project is not None else None
        if not value or self.project is None:
            return None
        listed = value if isinstance(value, list) else [value]
        return tuple(self.project.path_value(str(v)) for v in listed)

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
        from reconciler.plan.scope import Scope

        chosen = self.manifests if paths is None else paths
        if not chosen:
            raise ConfigError(NO_PATHS)
        address, _warning = self.state_address(chosen)
        return Scope(
            chosen,
            address,
            self.checked_workspace(),
            self.organization,
            self.layering(),
            self.environment_name,
            self.project_manifests,
            self.origin("state_path"),
        )

    def checked_workspace(self) -> str:
        """Return the workspace, refused naming the setting that gave it when it is unusable."""
        from reconciler.state.backend import check_workspace

        try:
            check_workspace(self.workspace)
        except ConfigError as exc:
            raise ConfigError(f"{self.origin('workspace') or '--workspace'}: {exc}") from None
        return self.workspace

    def open_backend(self, paths: tuple[str, ...] | None = None) -> Backend:
        """Open the state backend (the caller closes it); no state set: the project's file."""
        from reconciler.state.stores import open_backend

        address, _warning = self.state_address(paths)
        return open_backend(address, self.workspace, self.origin("state_path"))

    def layering(self) -> Layering | None:
        """Return the chosen environment's overlays and excludes (None without either)."""
        from reconciler.load.overlays import Layering

        env = self.environment
        if env is None or not (env.overlays or env.exclude):
            return None
        if self.project is None:
            return Layering(env.overlays, env.exclude)
        at = self.project.where
        return Layering(
            env.overlays,
            env.exclude,
            at((*env.key, "exclude")),
            at((*env.key, "overlays")),
            self.project_manifests,
        )

    def origin(self, name: str) -> str | None:
        """Name where a setting's value came from, for messages: its flag, its variable (and
        the env file that set it) or its project-file key; None for a built-in default."""
        found = self.resolved(name)
        setting = found.setting
        if found.source is Source.FLAG:
            return setting.flag or setting.param
        if found.source is Source.ENV:
            return setting.variable
        if found.source is Source.ENV_FILE:
            variable = str(setting.variable)
            return f"{variable} (set by env file {self.env_file_of(variable)})"
        if found.source is Source.PROJECT:
            return f"{found.where}: {setting.name}"
        if found.source is Source.ENVIRONMENT:
            return found.where
        return None

    def ignored_variable(self, name: str) -> str | None:
        """Return the generic variable (``RECONCILE_KEY_ID``) that is set but unused because the
        chosen environment writes this setting itself; None when there is none."""
        found = self.resolved(name)
        variable = found.setting.variable
        if found.source is not Source.ENVIRONMENT or not variable:
            return None
        return variable if self.environ.get(variable) else None

    def api_config(self, *, insecure: bool = False) -> ApiConfig:
        """Return the client's configuration (``ApiConfig.check`` is the caller's, as before)."""
        from reconciler.settings.apiconfig import api_config_of

        self.check(("key_id", "key_secret", "dashboards_token"))
        origins = {p: found for p in self.values if (found := self.origin(p))}
        values = {p: r.value for p, r in self.values.items()}
        return api_config_of(values, insecure=insecure, origins=origins)

    def check(self, params: Collection[str] | None = None) -> None:
        """Raise ``ConfigError`` for a setting (of ``params``) whose value could not be read:
        an environment's credential whose variable is unset or empty, or whose file is empty."""
        problems = [
            r.problem
            for r in self.rows()
            if r.problem and (params is None or r.setting.param in params)
        ]
        if problems:
            raise ConfigError("; ".join(problems))

    def override(self, explicit: Mapping[str, object]) -> Settings:
        """Return these settings with more explicit values (flags) on top; no file is read."""
        given = {
            **self.request.explicit,
            **{setting_named(k).param: v for k, v in explicit.items()},
        }
        request = replace(self.request, explicit=given)
        return replace(self, request=request, values=resolve_all(self, given))

    def secret_variables(self) -> AbstractContextManager[None]:
        """Return a context in which manifests' ``{fromEnv}`` references read ``environ``
        (the env files' variables included) instead of ``os.environ``."""
        from reconciler.model.secrets import variables

        return variables(self.environ)

    def secret_files(self) -> SecretFiles:
        """Return where ``{fromFile}`` secrets may be read: the project directory (else the
        current one), then the project file's ``secretDirs``."""
        from reconciler.client.defaults import parse_size

        cap = self.values["max_secret_file_size"]
        try:
            max_bytes = parse_size(str(cap.value))
        except ConfigError as exc:
            raise ConfigError(f"{cap.where}: {exc}") from None
        return secret_files_of(self.project, self.values["secret_dirs"].value, max_bytes)

    def for_environment(self, name: str) -> Settings:
        """Resolve the same request (explicit values, files) for environment ``name``."""
        return resolve_request(replace(self.request, environment=name, environment_from="--env"))

    def reload(self) -> Settings:
        """Resolve the same request again: re-read the project file, env files and variables."""
        return resolve_request(self.request)


def resolve(
    explicit: Mapping[str, object] | None = None,
    *,
    config: str | None = None,
    env_file: str | None = None,
    environment: str | None = None,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every setting; ``explicit`` maps parameter names or keys to given values."""
    given = {setting_named(k).param: v for k, v in (explicit or {}).items()}
    request = SettingsRequest(given, config, env_file, environment, "--env", cwd, environ)
    return resolve_request(request)


def resolve_request(request: SettingsRequest) -> Settings:
    """Resolve ``request`` (``Settings.reload`` calls this again)."""
    base = dict(os.environ if request.environ is None else request.environ)
    project = project_file(request, base)
    environ = dict(base)
    file_values: dict[str, str] = {}
    env_files: list[EnvFile] = []
    if request.env_file is not None:
        if not Path(request.env_file).is_file():
            raise ConfigError(f"env file {request.env_file} does not exist")
        env_files.append(read_env_file(request.env_file, environ, file_values))
    if project is not None and project.get(("envFile",)):
        named = project.path_value(str(project.get(("envFile",))))
        env_files.append(read_env_file(named, environ, file_values))
    environments = parse_environments(project) if project is not None else {}
    chosen: Environment | None = None
    if project is not None:
        asked, asked_from = request.environment, request.environment_from
        if asked is None and environ.get(ENV_VARIABLE):
            asked, asked_from = environ[ENV_VARIABLE], ENV_VARIABLE
        stated = project.get((DEFAULT_ENVIRONMENT,))
        default = stated if isinstance(stated, str) else None  # the schema makes it a string
        chosen = choose(environments, asked, asked_from, default, project_name(project))
    elif request.environment is not None:
        raise ConfigError(f"{request.environment_from} {request.environment}: no project file")
    if chosen is not None and chosen.env_file is not None:
        env_files.append(read_env_file(chosen.env_file, environ, file_values))
    settings = Settings(
        request=request,
        values={},
        project=project,
        environment=chosen,
        environments=environments,
        env_files=tuple(env_files),
        environ=environ,
        env_file_values=file_values,
    )
    return settings.override({})


def list_environments(
    *, config: str | None = None, cwd: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Environment]:
    """Return the project file's environments by name (empty without a project file)."""
    request = SettingsRequest(config=config, cwd=cwd, environ=environ)
    project = project_file(request, dict(os.environ if environ is None else environ))
    return parse_environments(project) if project is not None else {}


def resolve_environments(
    names: Collection[str] | None = None,
    explicit: Mapping[str, object] | None = None,
    *,
    config: str | None = None,
    env_file: str | None = None,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Settings]:
    """Resolve the settings of several environments (default: all), each on its own."""
    chosen = (
        names if names is not None else list_environments(config=config, cwd=cwd, environ=environ)
    )
    return {
        name: resolve(
            explicit, config=config, env_file=env_file, environment=name, cwd=cwd, environ=environ
        )
        for name in chosen
    }
