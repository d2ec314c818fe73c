"""``reconcile config`` (what a run would use, and from where) and ``reconcile version``.

``config`` takes the same settings options as ``apply`` — copied from it when the commands
are registered, so an option added there (``--workspace``) is reported here too — resolves
them through the core (``reconciler.settings``, as every command does) and prints each value
with its source, real defaults included. Secrets are shown as ``****``; env files are listed by the names of the
variables they set, never their values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import click

from reconciler.cli import config as cfg

__all__: list[str] = []


@click.command("version")
def version() -> None:
    """Print the package version (the same as --version)."""
    from reconciler.model.version import __version__

    click.echo(f"reconcile {__version__}")


def config_command(source: click.Command) -> click.Command:
    """Build ``reconcile config`` from the settings options of ``source`` (``apply``)."""
    from reconciler.cli.machine import remember_output
    from reconciler.settings import SETTING_PARAMS

    params: list[click.Parameter] = [p for p in source.params if p.name in SETTING_PARAMS]
    params.append(
        click.Option(
            ["--output", "-o", "output"],
            type=click.Choice(["text", "json"]),
            default="text",
            show_default=True,
            is_eager=True,
            callback=remember_output,
            help="Output format (json: one document, also on errors).",
        )
    )
    return click.Command(
        "config",
        params=params,
        callback=_config,
        help=(
            "Show the settings a run would use and where each came from: flag > environment "
            "variable > project file > default; with `environments:` in the project file, flag "
            "> the environment's own value > environment variable > project file > default (a "
            "variable the environment overrode is marked ignored). Secrets are masked."
        ),
    )


@click.pass_context
def _config(ctx: click.Context, /, output: str, **_: object) -> int:
    from reconciler.settings import Settings

    settings: Settings | None = cfg.settings_of(ctx)
    if settings is None:  # only when prepare did not run (a bare in-process call)
        from reconciler.settings import resolve

        settings = resolve()
    params = {p.name for p in ctx.command.params}
    file = settings.project
    environment = settings.environment
    # (key, value shown, source, the generic variable an environment's own value overrode)
    rows = [
        (r.setting.name, _shown(settings, r), r.where, settings.ignored_variable(r.setting.param))
        for r in settings.rows()
        if r.setting.param in params or not r.setting.flag  # secretDirs: the project file's only
    ]
    if output == "json":
        body: dict[str, object] = {
            "formatVersion": 1,
            "exitCode": 0,
            "projectFile": str(file.path) if file is not None else None,
            "environment": environment.name if environment else None,
            "environments": sorted(settings.environments),
            "envFiles": [
                {"path": e.path, "found": e.found, "loaded": list(e.loaded), "kept": list(e.kept)}
                for e in settings.env_files
            ],
            "settings": [
                {"key": k, "value": v, "source": s} | ({"ignored": i} if i else {})
                for k, v, s, i in rows
            ],
        }
        if environment is not None:
            body["overlays"] = list(environment.overlays)
            body["exclude"] = list(environment.exclude)
        click.echo(json.dumps(body, indent=2))
        return 0
    from reconciler.plan.render import table

    click.echo(f"Project file: {file.path if file is not None else '(none found)'}")
    if environment is not None:
        click.echo(
            f"Environment:  {environment.name} (of {', '.join(sorted(settings.environments))})"
        )
        if environment.overlays:
            click.echo(f"Overlays:     {', '.join(environment.overlays)}")
        if environment.exclude:
            click.echo(f"Exclude:      {', '.join(environment.exclude)}")
    for env_file in settings.env_files:
        if not env_file.found:
            click.echo(f"Env file:     {env_file.path} (not found, skipped)")
            continue
        line = f"Env file:     {env_file.path}: set {_names(env_file.loaded)}"
        if env_file.kept:
            line += f"; already set, kept: {_names(env_file.kept)}"
        click.echo(line)
    click.echo("")
    lines = [[k, v, _source(settings, k, s, i)] for k, v, s, i in rows]
    click.echo(table(lines, ["SETTING", "VALUE", "SOURCE"]), nl=False)
    return 0


def _shown(settings: object, resolved: object) -> str:
    """Return a value for display: the state's default location is worked out, never '-'."""
    from reconciler.settings import Resolved, Settings, Source

    assert isinstance(settings, Settings) and isinstance(resolved, Resolved)
    if resolved.setting.param == "state_path" and resolved.source is Source.DEFAULT:
        from pathlib import Path

        from reconciler.load.project import display_path

        address, _warning = settings.state_address()
        return display_path(Path(address))
    return resolved.shown()


def _source(settings: object, key: str, where: str, ignored: str | None) -> str:
    """Return where a value came from, and the generic variable the environment overrode."""
    from reconciler.settings import Settings

    assert isinstance(settings, Settings)
    if ignored is None or settings.environment is None:
        return where
    file = settings.env_file_of(ignored)
    variable = f"{ignored} from env file {file}" if file else ignored
    return f"{where} ({variable} ignored: environment {settings.environment.name} sets {key})"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "nothing"
