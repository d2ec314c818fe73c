"""``reconcile config`` (what a run would use, and from where) and ``reconcile version``.

``config`` takes the same settings options as ``apply`` — copied from it when the commands
are registered, so an option added there (``--workspace``) is reported here too — resolves
them through the one configuration layer (``reconciler.cli.config``) and prints each value
with its source. Secrets are shown as ``****``; env files are listed by the names of the
variables they set, never their values.
"""

from __future__ import annotations

import json

import click

from reconciler.cli import config as cfg


@click.command("version")
def version() -> None:
    """Print the package version (the same as --version)."""
    from reconciler.model.version import __version__

    click.echo(f"reconcile {__version__}")


def config_command(source: click.Command) -> click.Command:
    """Build ``reconcile config`` from the settings options of ``source`` (``apply``)."""
    params: list[click.Parameter] = [p for p in source.params if p.name in cfg.SETTING_PARAMS]
    params.append(
        click.Option(
            ["--output", "-o", "output"],
            type=click.Choice(["text", "json"]),
            default="text",
            show_default=True,
            help="Output format.",
        )
    )
    return click.Command(
        "config",
        params=params,
        callback=_config,
        help=(
            "Show the settings a run would use and where each came from "
            "(flag > environment variable > project file > default). Secrets are masked."
        ),
    )


@click.pass_context
def _config(ctx: click.Context, /, output: str, **_: object) -> int:
    project = cfg.project_of(ctx)
    rows = [
        (setting.name, cfg.shown(setting, value), source)
        for setting, _param, value, source in cfg.resolved(ctx)
    ]
    file = project.file
    if output == "json":
        body = {
            "projectFile": str(file.path) if file is not None else None,
            "envFiles": [
                {"path": e.path, "found": e.found, "loaded": e.loaded, "kept": e.kept}
                for e in project.env_files
            ],
            "settings": [{"key": k, "value": v, "source": s} for k, v, s in rows],
        }
        click.echo(json.dumps(body, indent=2))
        return 0
    from reconciler.plan.render import table

    click.echo(f"Project file: {file.path if file is not None else '(none found)'}")
    for env_file in project.env_files:
        if not env_file.found:
            click.echo(f"Env file:     {env_file.path} (not found, skipped)")
            continue
        line = f"Env file:     {env_file.path}: set {_names(env_file.loaded)}"
        if env_file.kept:
            line += f"; already set, kept: {_names(env_file.kept)}"
        click.echo(line)
    click.echo("")
    click.echo(table([list(row) for row in rows], ["SETTING", "VALUE", "SOURCE"]), nl=False)
    return 0


def _names(names: list[str]) -> str:
    return ", ".join(names) if names else "nothing"
