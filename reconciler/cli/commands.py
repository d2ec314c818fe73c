"""Click commands, one module per command family; ``register`` adds them to the group.

A command module imports only click at import time; core modules are imported inside the
command body, which keeps start-up cheap for the commands that do not need them.
"""

from __future__ import annotations

import importlib

import click

# (module, attribute) of each command; a module that is missing is skipped so that the
# group still works while a command family is being built.
_COMMANDS: tuple[tuple[str, str], ...] = (
    ("reconciler.cli.validate", "validate"),
    ("reconciler.cli.plan", "plan"),
    ("reconciler.cli.apply", "apply"),
    ("reconciler.cli.inventory", "get"),
    ("reconciler.cli.inventory", "export"),
    ("reconciler.cli.inventory", "check"),
    ("reconciler.cli.emulator", "emulator"),
)


def register(group: click.Group) -> None:
    """Add every available command to ``group``."""
    for module_name, attr in _COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        group.add_command(getattr(module, attr))
