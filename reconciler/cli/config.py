"""Where every setting comes from: flag > environment variable > project file > default.

This is the one configuration layer of the command line. Before a command parses its own
options, ``prepare`` finds the project file (``--config FILE``, ``RECONCILE_CONFIG``, or the
nearest ``reconcile.yaml`` from the current directory upwards), reads the env files
(``--env-file``, then the project's ``envFile``) into the environment without overriding a
variable that is already set, and hands the project's values to click as each command's
``default_map``. Click then resolves every option in the documented order — command line,
environment variable, ``default_map``, built-in default — and records which one it used, so
``reconcile config`` reports exactly what a run would use, and where it came from.

``SETTINGS`` is the table of project-file keys and the option each one feeds; an option that
is added to a command later (``--workspace``) picks up its key without further code.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from reconciler.model.resources import JsonPath

META_KEY = "reconcile.project"
CONFIG_FLAGS = ("--config",)
ENV_FILE_FLAGS = ("--env-file",)
# Commands that never read settings: a broken project file must not stop them.
INDEPENDENT = frozenset({"version", "emulator", "explain", "completion"})


@dataclass(frozen=True)
class Setting:
    """One setting: its project-file key, the click parameter it feeds, how it is shown."""

    key: JsonPath
    param: str
    secret: bool = False
    path: bool = False
    in_project: bool = True

    @property
    def name(self) -> str:
        """Return the dotted project-file key (``rates.management``)."""
        return ".".join(str(p) for p in self.key)


SETTINGS: tuple[Setting, ...] = (
    Setting(("manifests",), "paths", path=True),
    Setting(("state",), "state_path", path=True),
    Setting(("workspace",), "workspace"),
    Setting(("organizationId",), "organization"),
    Setting(("baseUrl",), "base_url"),
    Setting(("dashboardsUrl",), "dashboards_url"),
    Setting(("keyId",), "key_id", in_project=False),
    Setting(("keySecret",), "key_secret", secret=True, in_project=False),
    Setting(("dashboardsToken",), "dashboards_token", secret=True, in_project=False),
    Setting(("rates", "management"), "rate"),
    Setting(("rates", "dashboards"), "dashboards_rate"),
    Setting(("parallelism",), "parallelism"),
    Setting(("timeout",), "timeout"),
    Setting(("lockTimeout",), "lock_timeout"),
    Setting(("limits", "maxWait"), "max_wait"),
    Setting(("limits", "retryBudget"), "retry_budget"),
    Setting(("limits", "maxAttempts"), "max_attempts"),
    Setting(("limits", "requestDeadline"), "request_deadline"),
    Setting(("limits", "maxResponseSize"), "max_response_size"),
)
SETTING_PARAMS = frozenset(s.param for s in SETTINGS)


@dataclass
class EnvFile:
    """One env file read before the run: which variables it set and which it left alone."""

    path: str
    found: bool
    loaded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


@dataclass
class Project:
    """What ``prepare`` found: the project file (if any) and the env files read."""

    file: Any = None  # reconciler.load.project.ProjectFile | None (imported lazily)
    env_files: list[EnvFile] = field(default_factory=list)

    def env_file_of(self, variable: str) -> str | None:
        """Return the env file that set ``variable``, or None."""
        for env_file in self.env_files:
            if variable in env_file.loaded:
                return env_file.path
        return None


def scan(args: Sequence[str], flags: Sequence[str]) -> str | None:
    """Return the last value given to one of ``flags`` in ``args`` (before a ``--``)."""
    found: str | None = None
    tokens = list(args)
    for i, token in enumerate(tokens):
        if token == "--":
            break
        for flag in flags:
            if token == flag and i + 1 < len(tokens):
                found = tokens[i + 1]
            elif token.startswith(flag + "="):
                found = token[len(flag) + 1 :]
    return found


def prepare(ctx: click.Context, args: Sequence[str], subcommand: str | None) -> Project:
    """Find the project file, read the env files, and set the commands' ``default_map``."""
    from reconciler.load.project import find_project_file, load_project_file
    from reconciler.model.errors import ConfigError, ReconcileError

    config = scan(args, CONFIG_FLAGS) or os.environ.get("RECONCILE_CONFIG") or None
    env_file = scan(args, ENV_FILE_FLAGS)
    project = Project()
    ctx.meta[META_KEY] = project
    try:
        if config is not None:
            path = Path(config)
            if not path.exists():
                raise ConfigError(f"project file {config} does not exist")
            project.file = load_project_file(path)
        else:
            found = find_project_file()
            project.file = load_project_file(found) if found else None
    except ReconcileError:
        if subcommand in INDEPENDENT:
            return project
        raise
    if env_file is not None:
        if not Path(env_file).is_file():
            raise ConfigError(f"env file {env_file} does not exist")
        project.env_files.append(_load_env_file(ctx, env_file))
    if project.file is not None:
        named = project.file.get(("envFile",))
        if named:
            project.env_files.append(_load_env_file(ctx, project.file.path_value(named)))
        ctx.default_map = _default_map(ctx.command, project.file)
    return project


def _load_env_file(ctx: click.Context, path: str) -> EnvFile:
    """Read ``path`` into the environment, never overriding a variable that is set."""
    from dotenv import dotenv_values

    record = EnvFile(path=path, found=Path(path).is_file())
    if not record.found:
        return record
    added: dict[str, str] = {}
    for name, value in dotenv_values(path).items():
        if value is None:
            continue
        if name in os.environ:
            record.kept.append(name)
        else:
            os.environ[name] = added[name] = value
            record.loaded.append(name)

    def forget() -> None:
        # In-process callers (tests, a library user) get their environment back.
        for name, value in added.items():
            if os.environ.get(name) == value:
                del os.environ[name]

    ctx.call_on_close(forget)
    return record


def _default_map(command: click.Command, project: Any) -> dict[str, Any]:
    """Return click's nested ``default_map`` of ``command`` from the project file's values."""
    out: dict[str, Any] = {}
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            values = _default_map(sub, project)
            if values:
                out[name] = values
        return out
    params = {p.name for p in command.params}
    for setting in SETTINGS:
        if not setting.in_project or setting.param not in params:
            continue
        value = project.get(setting.key)
        if value is None:
            continue
        if setting.path:
            value = (
                [project.path_value(v) for v in value]
                if isinstance(value, list)
                else project.path_value(value)
            )
        out[setting.param] = value
    return out


def project_of(ctx: click.Context) -> Project:
    """Return what ``prepare`` found for this run (an empty project when it did not run)."""
    found = ctx.find_root().meta.get(META_KEY)
    return found if isinstance(found, Project) else Project()


def project_manifests(ctx: click.Context) -> tuple[str, ...] | None:
    """Return the manifest paths the project file names (None: no project file names any)."""
    file = project_of(ctx).file
    value = file.get(("manifests",)) if file is not None else None
    if not value:
        return None
    listed = value if isinstance(value, list) else [value]
    return tuple(file.path_value(str(v)) for v in listed)


def source_of(ctx: click.Context, param: click.Parameter) -> str:
    """Say where the value of ``param`` came from: flag, env, env file, project file, default."""
    assert param.name is not None
    source = ctx.get_parameter_source(param.name)
    project = project_of(ctx)
    if source is ParameterSource.COMMANDLINE:
        return f"flag {param.opts[0]}" if isinstance(param, click.Option) else "argument"
    if source is ParameterSource.ENVIRONMENT:
        variable = _envvar_used(param)
        from_file = project.env_file_of(variable) if variable else None
        return f"env file {from_file} ({variable})" if from_file else f"env {variable}"
    if source is ParameterSource.DEFAULT_MAP and project.file is not None:
        setting = next(s for s in SETTINGS if s.param == param.name)
        return str(project.file.where(setting.key))
    return "default"


def _envvar_used(param: click.Parameter) -> str | None:
    names = param.envvar
    if names is None:
        return None
    for name in [names] if isinstance(names, str) else list(names):
        if os.environ.get(name):
            return name
    return None


def resolved(ctx: click.Context) -> Iterator[tuple[Setting, click.Parameter, Any, str]]:
    """Yield every setting the command has: its parameter, value and source."""
    params = {p.name: p for p in ctx.command.params}
    for setting in SETTINGS:
        param = params.get(setting.param)
        if param is not None:
            yield setting, param, ctx.params.get(setting.param), source_of(ctx, param)


def shown(setting: Setting, value: Any) -> str:
    """Return a setting's value for display; a secret is never shown."""
    if value is None or value == () or value == "":
        return "-"
    if setting.secret:
        return "****"
    if setting.param == "state_path":
        from reconciler.state.backend import redact_address

        return redact_address(str(value))  # a libpq URL may carry a password
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)
