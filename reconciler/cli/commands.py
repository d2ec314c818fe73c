"""Click commands, one module per command family, loaded when first asked for.

A command module imports only click at import time; core modules are imported inside the
command body, which keeps start-up cheap for the commands that do not need them. The root
group (``LazyCommands``) imports a command's module only when that command runs or is listed
(``--help``, completion): a run of ``apply`` does not build the options of fifteen other
commands (~30 ms of every start, before the manifests can begin to be read).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

__all__: list[str] = []


# Each command's name and the module of ``reconciler.cli`` that defines it (under the same
# name), in the order ``--help`` lists them; ``config`` is built from ``apply``'s options.
_COMMANDS: dict[str, str] = {
    "validate": "validate",
    "plan": "plan",
    "apply": "apply",
    "watch": "watch",
    "get": "get",
    "export": "inventory",
    "check": "inventory",
    "init": "init",
    "emulator": "emulator",
    "version": "project",
    "fmt": "fmt",
    "explain": "explain",
    "discover": "discover",
    "completion": "completion",
    "state": "state",
    "render": "environments",
    "compare": "environments",
    "config": "project",
}
# Where the attribute is not the command's name.
_MADE_BY = {"config": "config_command"}


def _settings_params(*, chooses_environment: bool = True) -> list[click.Option]:
    # Read by the configuration layer from the raw command line before any command parses
    # its options (so the env file is loaded before environment variables are consulted);
    # declared on every command so that they are accepted, and listed, everywhere - except
    # ``--env`` on a command that never uses one (``compare`` names its environments as
    # arguments): accepted there all the same, so no existing command line breaks, not listed.
    return [
        click.Option(
            ["--config", "config_file"],
            metavar="FILE",
            expose_value=False,
            help="Project file [default: reconcile.yaml here or above; env RECONCILE_CONFIG].",
        ),
        click.Option(
            ["--env", "environment"],
            metavar="NAME",
            expose_value=False,
            hidden=not chooses_environment,
            help="Environment of the project file to use [env RECONCILE_ENV].",
        ),
        click.Option(
            ["--env-file", "env_file"],
            metavar="FILE",
            expose_value=False,
            help="Read variables from this dotenv file (never overriding ones already set).",
        ),
    ]


def SETTINGS_OPTIONS(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--config``, ``--env`` and ``--env-file`` to a group or command."""
    params = getattr(func, "__click_params__", [])
    params.extend(_settings_params())
    func.__click_params__ = params  # type: ignore[attr-defined]
    return func


class LazyCommands(click.Group):
    """A group whose commands are imported when first asked for (see the module docstring)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, in the order ``--help`` lists them."""
        return [*_COMMANDS, *(name for name in self.commands if name not in _COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return the command named ``cmd_name``, importing and preparing it the first time."""
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in _COMMANDS:
            command = _load(self, cmd_name)
            self.add_command(command, cmd_name)
        return command


def _load(group: click.Group, name: str) -> click.Command:
    """Import the command ``name``, with the settings options and resolution every command has."""
    from reconciler.cli.config import INDEPENDENT, NO_ENVIRONMENT, leaves, with_settings

    module = importlib.import_module(f"reconciler.cli.{_COMMANDS[name]}")
    made = getattr(module, _MADE_BY.get(name, name))
    command: click.Command = made
    if name == "config":  # built from apply's settings options
        apply = group.get_command(click.Context(group), "apply")
        assert apply is not None
        command = made(apply)
    unused = NO_ENVIRONMENT - INDEPENDENT  # read settings, but never choose an environment
    for leaf in leaves(command):
        leaf.params.extend(_settings_params(chooses_environment=leaf.name not in unused))
        with_settings(leaf)
    return command
