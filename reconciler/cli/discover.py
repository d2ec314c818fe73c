"""``reconcile discover``: complete a pipe manifest with the columns its source's samples carry.

Prints the manifest with ``destination.columns`` and ``fieldMappings`` added (types as the
service inferred them), or writes it back with ``--write``; the work is done by
``reconciler.inventory.discover``. Secret references are resolved as for ``plan`` and never
printed.
"""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.cli.common import Connection, api_options
from reconciler.cli.inventory import org_option, read_live


@click.command("discover")
@click.argument("manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--write", is_flag=True, help="Write the completed manifest back to MANIFEST (else print it)."
)
@org_option
@api_options
def discover(connection: Connection, organization: str | None, manifest: Path, write: bool) -> int:
    """Add destination.columns and fieldMappings inferred from a kafka or kinesis source's
    samples to MANIFEST (a pipe manifest without them), keeping its comments."""
    from reconciler.inventory.discover import discover_file

    found = read_live(
        connection,
        organization,
        lambda client, org: discover_file(client, org or None, manifest),
        need_org=False,
    )
    if not write:
        click.echo(found.text, nl=False)
        return 0
    manifest.write_text(found.text, encoding="utf-8")
    for pipe in found.pipes:
        sample = f" (sample {pipe.sample})" if pipe.sample else ""
        click.echo(f"{manifest}: pipe {pipe.name}: {len(pipe.columns)} columns discovered{sample}")
    return 0
