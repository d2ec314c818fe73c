"""``reconcile init [DIR]``: start a project — the project file, example manifests, CI.

Thin: the files and their contents are the core's (``reconciler.settings.scaffold``); this
prints one line per file (created, or skipped because it exists: nothing is ever overwritten)
and what to run next.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__: list[str] = []


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
def init(directory: Path) -> int:
    """Create a project in DIRECTORY (default: here); existing files are left as they are."""
    from reconciler.model.version import package_version
    from reconciler.settings.scaffold import Outcome, init_project

    written = init_project(directory, package_version())
    for entry in written:
        note = "  (exists, left as it is)" if entry.outcome is Outcome.SKIPPED else ""
        click.echo(f"{entry.outcome:<8} {directory / entry.path}{note}")
    created = sum(1 for w in written if w.outcome is Outcome.CREATED)
    click.echo(f"{created} created, {len(written) - created} skipped.")
    click.echo(
        "Next, try it against the emulator:\n"
        "  reconcile emulator            # prints the export lines to paste in another shell\n"
        "  reconcile plan\n"
        "Then put your organization's credentials in the environment and real secrets in .env."
    )
    return 0
