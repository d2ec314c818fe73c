"""``reconcile state``: inspect and edit the state wherever it lives, move it, clear a lock.

Each sub-command parses ``--state``/``--workspace`` (the same options and variables as
``plan``/``apply``), calls one function of ``reconciler.state.ops`` and renders the result.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.options import output_option, setting_option, setting_options

if TYPE_CHECKING:
    from reconciler.settings import Settings
    from reconciler.state.backend import Backend

__all__: list[str] = []


def _where(func: Any) -> Any:
    """Add ``--state`` and ``--workspace``; the command gets the run's settings first."""
    return setting_options("state_path", "workspace")(pass_settings(func))


def _backend(settings: Settings) -> Backend:
    """Open the state the settings name (without a state setting: the project root's file)."""
    return settings.open_backend(())


_lock_timeout = setting_option("lock_timeout")
_output = output_option("text", "json", machine=True)


def _json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


def _document(data: dict[str, Any]) -> None:
    """Print a command's own JSON document (not a state record): format and exit code first."""
    _json({"formatVersion": 1, "exitCode": 0, **data})


@click.group("state")
def state() -> None:
    """Inspect and edit the state (any backend), move it, or clear a dead run's lock."""


@state.command("list")
@_where
@_output
def list_(settings: Settings, output: str) -> int:
    """Print every address in the state (Kind/name), one a line."""
    from reconciler.state import ops

    backend = _backend(settings)
    try:
        addresses = ops.list_addresses(backend)
    finally:
        backend.close()
    if output == "json":
        _json(addresses)
    else:
        for address in addresses:
            click.echo(address)
    return 0


@state.command("show")
@click.argument("address")
@_where
@_output
def show(settings: Settings, address: str, output: str) -> int:
    """Print what the state records for ADDRESS (fingerprints, ids; never a secret)."""
    from reconciler.state import ops

    backend = _backend(settings)
    try:
        entry = ops.show(backend, address)
        address = ops.recorded_address(backend, address)
    finally:
        backend.close()
    if output == "json":
        _json(entry)
    else:
        click.echo(address)
        for key in sorted(entry):
            click.echo(f"  {key}: {json.dumps(entry[key], sort_keys=True)}")
    return 0


@state.command("rm")
@click.argument("addresses", nargs=-1, required=True)
@_where
@_lock_timeout
@_output
def rm(settings: Settings, addresses: tuple[str, ...], output: str) -> int:
    """Forget ADDRESSES (the live objects are left alone; the next apply may adopt or create)."""
    from reconciler.state import ops

    backend = _backend(settings)
    try:
        removed = ops.remove(backend, list(addresses), timeout=settings.seconds("lock_timeout"))
    finally:
        backend.close()
    if output == "json":
        _document({"removed": removed})
    else:
        for address in removed:
            click.echo(f"Removed {address} from the state.")
    return 0


@state.command("mv")
@click.argument("old")
@click.argument("new")
@_where
@_lock_timeout
@_output
def mv(settings: Settings, old: str, new: str, output: str) -> int:
    """Move the record at OLD to NEW (after renaming a resource's metadata.name)."""
    from reconciler.state import ops

    backend = _backend(settings)
    try:
        ops.move(backend, old, new, timeout=settings.seconds("lock_timeout"))
    finally:
        backend.close()
    if output == "json":
        _document({"moved": {"from": old, "to": new}})
    else:
        click.echo(f"Moved {old} to {new}.")
    return 0


@state.command("pull")
@_where
def pull(settings: Settings) -> int:
    """Print the state document (JSON, formatVersion and all), byte for byte."""
    from reconciler.state import ops

    backend = _backend(settings)
    try:
        data = ops.pull(backend)
    finally:
        backend.close()
    click.echo(data, nl=False)  # bytes: written to the binary stream untouched
    return 0


@state.command("push")
@click.argument("file", type=click.File("rb"))
@click.option("--force", is_flag=True, help="Replace a state of a different lineage.")
@_where
@_lock_timeout
def push(settings: Settings, file: Any, force: bool) -> int:
    """Store FILE ('-' for stdin) as the state, byte for byte (same lineage unless --force)."""
    from reconciler.state import ops

    data = file.read()
    backend = _backend(settings)
    try:
        source = f"{getattr(file, 'name', '-')} (the file to push)"
        lineage = ops.push(
            backend, data, force=force, timeout=settings.seconds("lock_timeout"), source=source
        )
    finally:
        backend.close()
    click.echo(f"Pushed {len(data)} bytes to {backend.description} (lineage {lineage}).")
    return 0


@state.command("unlock")
@click.argument("lock_id")
@_where
def unlock(settings: Settings, lock_id: str) -> int:
    """Remove the lock LOCK_ID left by a run that died (the ID is in the lock message)."""
    backend = _backend(settings)
    try:
        click.echo(backend.unlock(lock_id))
    finally:
        backend.close()
    return 0


@state.command("migrate")
@click.option("--to", "to", required=True, metavar="PATH|URL", help="Where to copy the state.")
@click.option(
    "--to-workspace", help="Workspace at the destination [default: the same as --workspace]."
)
@click.option("--force", is_flag=True, help="Replace a different state at the destination.")
@_where
@_lock_timeout
@_output
def migrate(
    settings: Settings,
    to: str,
    to_workspace: str | None,
    force: bool,
    output: str,
) -> int:
    """Copy the state to another backend under both locks, and verify the copy."""
    from reconciler.model.errors import ConfigError
    from reconciler.state import ops
    from reconciler.state.stores import open_backend

    workspace = settings.workspace
    source = _backend(settings)
    destination = open_backend(to, to_workspace or workspace, "--to")
    if destination.description == source.description:
        raise ConfigError(f"--to {destination.description} is the state itself")
    try:
        result = ops.migrate(
            source, destination, force=force, timeout=settings.seconds("lock_timeout")
        )
    finally:
        source.close()
        destination.close()
    if output == "json":
        _document(dataclasses.asdict(result))
    elif result.copied:
        click.echo(
            f"Copied the state ({result.resources} resources, {result.bytes} bytes, lineage "
            f"{result.lineage}) from {result.source} to {result.destination} and verified it."
        )
        click.echo(
            f"The source was left in place: point --state (RECONCILE_STATE) at {to} from now on."
        )
    else:
        click.echo(f"{result.destination} already holds this state; nothing to copy.")
    return 0
