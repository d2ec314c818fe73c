"""``reconcile explain KIND[.path]``: describe a manifest field from the JSON Schemas."""

from __future__ import annotations

import json

import click

from reconciler.cli.options import output_option

__all__: list[str] = []


@click.command("explain")
@click.argument("target", metavar="KIND[.path]")
@output_option("text", "json", help="Output format.")
def explain(target: str, output: str) -> int:
    """Describe a field: type, bounds, values, description, and whether it is writable,
    a read-only expectation or a sensitive secret (e.g. Pipe.spec.settings.engine_max_threads).
    """
    from reconciler.load.explain import explain as describe
    from reconciler.load.explain import render

    item = describe(target)
    if output == "json":
        click.echo(json.dumps(item.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render(item), nl=False)
    return 0
