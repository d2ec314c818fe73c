"""The command line's side of the settings: find the flags, hand them to the core, pass the result.

Settings are resolved by the core (``reconciler.settings``: flag > environment's value >
variable > project file > default, each with its provenance). This module only finds
``--config``, ``--env-file`` and ``--env`` on the raw command line before any command parses
its options (``prepare``), and, when a command runs, hands the settings given on its command
line (and only those: ``ctx.get_parameter_source``) to ``Settings.override`` and the result to
the command (``with_settings``, ``pass_settings``). The env files' variables are added to this
process's environment for the run (manifests' ``fromEnv`` references read them), and removed
when it ends.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from reconciler.settings.table import SETTING_PARAMS

if TYPE_CHECKING:
    from reconciler.settings import Settings

__all__: list[str] = []


F = TypeVar("F", bound=Callable[..., Any])

META_KEY = "reconcile.settings"
CONFIG_FLAGS = ("--config",)
ENV_FILE_FLAGS = ("--env-file",)
ENV_FLAGS = ("--env",)
OUTPUT_FLAGS = ("-o", "--output")
# Commands that never read settings: a broken project file must not stop them.
INDEPENDENT = frozenset({"version", "emulator", "explain", "completion", "init"})
# Commands that run without choosing one environment: ``fmt`` reads no settings, ``compare``
# names its environments as arguments. (A command given ``--all-envs`` chooses none either.)
NO_ENVIRONMENT = INDEPENDENT | {"fmt", "compare"}


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


def prepare(ctx: click.Context, args: Sequence[str], subcommand: str | None) -> Any:
    """Resolve the settings without flags and load the env files, before any command parses."""
    from reconciler.model.errors import ReconcileError
    from reconciler.settings import SettingsRequest, resolve_request

    request = SettingsRequest(
        config=scan(args, CONFIG_FLAGS),
        env_file=scan(args, ENV_FILE_FLAGS),
        environment=scan(args, ENV_FLAGS),
        environ=dict(os.environ),
    )
    try:
        settings = resolve_request(request)
    except ReconcileError:
        if subcommand in INDEPENDENT:
            return None
        # The command's options are not parsed yet: its -o is read here, so that automation
        # asking for JSON gets the one document even for a broken project file or --env.
        from reconciler.cli.machine import remember_from_args

        remember_from_args(subcommand, scan(args, OUTPUT_FLAGS))
        raise
    ctx.meta[META_KEY] = settings
    _export_env_files(ctx, settings.env_file_values)
    return settings


def _export_env_files(ctx: click.Context, values: dict[str, str] | Any) -> None:
    """Add the env files' variables to this process for the run; remove them when it ends."""
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)

    def forget() -> None:
        # In-process callers (tests, a library user) get their environment back.
        for name, value in added.items():
            if os.environ.get(name) == value:
                del os.environ[name]

    ctx.call_on_close(forget)


def settings_of(ctx: click.Context) -> Any:
    """Return the run's ``Settings`` (None when a command that needs none ran without them)."""
    return ctx.find_root().meta.get(META_KEY)


def with_settings(command: click.Command) -> None:
    """Make ``command`` resolve its settings through the core: the settings given on its
    command line go to ``Settings.override`` as explicit values, the others are the core's."""
    callback = command.callback
    if callback is None or command.name in INDEPENDENT:
        return
    params = {p.name for p in command.params if p.name in SETTING_PARAMS}
    needs_environment = command.name not in NO_ENVIRONMENT

    @functools.wraps(callback)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        given = {name: kwargs.pop(name) for name in params}
        explicit = {
            name: value
            for name, value in given.items()
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        }
        settings = settings_of(ctx)
        if settings is None:  # a command called without the root group (a library caller)
            from reconciler.settings import resolve

            settings = resolve()
        settings = settings.override(explicit)
        ctx.find_root().meta[META_KEY] = settings
        # A command that runs every environment itself (``--all-envs``) chooses none here.
        if needs_environment and not kwargs.get("all_envs"):
            settings.require_environment()
        if command.name != "config":  # which shows them; every other command stops here
            settings.check(params)
        from reconciler.model.secretfiles import secret_files

        # Manifests' and credentials' ``{fromFile}`` secrets: inside the project (secretDirs).
        with secret_files(settings.secret_files()):
            return callback(*args, **kwargs)

    command.callback = wrapper


def pass_settings(func: F) -> F:
    """Hand a command the run's resolved ``Settings`` as its first argument."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(settings_of(click.get_current_context()), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def warn_legacy_state(settings: Settings, paths: tuple[str, ...] | None = None) -> None:
    """Say on stderr when the default state is a legacy file found beside the manifests."""
    _address, warning = settings.state_address(paths)
    if warning:
        click.echo(f"warning: {warning}", err=True)


def leaves(command: click.Command) -> list[click.Command]:
    """Return every command under ``command`` that is not a group."""
    if isinstance(command, click.Group):
        return [leaf for sub in command.commands.values() for leaf in leaves(sub)]
    return [command]
