"""``reconcile fmt``: rewrite manifests in the canonical style, keeping every comment.

``--check`` writes nothing and exits 1 when a file would change (for pre-commit and CI);
``--diff`` shows what would change. As for ``validate``, every YAML file under PATHS must be
a manifest: another YAML file is an error at its line, never skipped. With no PATHS the
project file's manifests are formatted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from reconciler.cli.config import pass_settings

if TYPE_CHECKING:
    from reconciler.settings import Settings

__all__: list[str] = []


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when a file would change.")
@click.option("--diff", "show_diff", is_flag=True, help="Show the changes as a unified diff.")
@pass_settings
def fmt(settings: Settings, check: bool, show_diff: bool) -> int:
    """Format manifests (files or directories) canonically, keeping comments and the modeline."""
    import difflib

    from reconciler.load.fmt import format_file
    from reconciler.load.manifestfiles import find_manifest_files
    from reconciler.model.errors import ConfigError
    from reconciler.settings import NO_PATHS

    paths = settings.manifests
    if not paths:
        raise ConfigError(NO_PATHS)
    results = [format_file(path) for path in find_manifest_files(paths)]
    errors = [r for r in results if r.error]
    changed = [r for r in results if r.changed]
    for result in errors:
        click.echo(f"{result.path}{result.error}", err=True)
    for result in changed:
        if show_diff:
            assert result.text is not None
            diff = difflib.unified_diff(
                result.original.splitlines(keepends=True),
                result.text.splitlines(keepends=True),
                fromfile=f"{result.path} (now)",
                tofile=f"{result.path} (formatted)",
            )
            click.echo("".join(diff), nl=False)
        if check:
            click.echo(f"would reformat {result.path}")
        else:
            assert result.text is not None
            result.path.write_text(result.text, encoding="utf-8")
            click.echo(f"reformatted {result.path}")
    formatted = sum(1 for r in results if r.text is not None)
    verb = "would be reformatted" if check else "reformatted"
    summary = f"{len(changed)} file{'s' if len(changed) != 1 else ''} {verb}, "
    summary += f"{formatted - len(changed)} already formatted"
    click.echo(summary + (f", {len(errors)} with errors" if errors else "") + ".")
    if errors:
        return 1
    return 1 if check and changed else 0
