"""Click commands, one module per command family; ``register`` adds them to the group.

A command module imports only click at import time; core modules are imported inside the
command body, which keeps start-up cheap for the commands that do not need them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

# (module, attribute) of each command, in the order ``--help`` lists them.
_COMMANDS: tuple[tuple[str, str], ...] = (
    ("reconciler.cli.validate", "validate"),
    ("reconciler.cli.plan", "plan"),
    ("reconciler.cli.apply", "apply"),
    ("reconciler.cli.watch", "watch"),
    ("reconciler.cli.get", "get"),
    ("reconciler.cli.inventory", "export"),
    ("reconciler.cli.inventory", "check"),
    ("reconciler.cli.emulator", "emulator"),
    ("reconciler.cli.project", "version"),
    ("reconciler.cli.fmt", "fmt"),
    ("reconciler.cli.explain", "explain"),
    ("reconciler.cli.completion", "completion"),
    ("reconciler.cli.state", "state"),
    ("reconciler.cli.environments", "render"),
    ("reconciler.cli.environments", "compare"),
)


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


def register(group: click.Group) -> None:
    """Add every command to ``group``."""
    for module_name, attr in _COMMANDS:
        group.add_command(getattr(importlib.import_module(module_name), attr))
    from reconciler.cli.config import INDEPENDENT, NO_ENVIRONMENT, leaves, with_settings
    from reconciler.cli.project import config_command

    group.add_command(config_command(group.commands["apply"]))
    unused = NO_ENVIRONMENT - INDEPENDENT  # read settings, but never choose an environment
    for leaf in leaves(group):
        leaf.params.extend(_settings_params(chooses_environment=leaf.name not in unused))
        with_settings(leaf)
