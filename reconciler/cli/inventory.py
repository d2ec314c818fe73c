"""``reconcile export`` and ``reconcile check``: read-only inventory commands (``get`` is in
``reconciler.cli.get``; both read through ``read_live`` from here, which hands the run's settings
to the core's read session, ``reconciler.inventory.session``).

``export`` turns live objects into manifests that validate and plan to no changes.
``check backups`` is a cron-friendly freshness check: exit 0 when every selected service has
a recent ``done`` backup, 2 (a finding, after the table) when any is stale.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.machine import remember_output
from reconciler.cli.metrics import metrics_option
from reconciler.cli.options import connection_options, output_option, path_option, setting_option
from reconciler.metrics import FINDING_EXIT_CODE, note

if TYPE_CHECKING:
    from reconciler.client.api import Client
    from reconciler.settings import Settings

__all__: list[str] = []


T = TypeVar("T")


def read_live(
    settings: Settings,
    insecure: bool,
    fetch: Callable[[Client, str], Awaitable[T]],
    *,
    need_org: bool = True,
) -> T:
    """Run ``fetch(client, org)`` in the core's read session, configured by the run's settings."""
    from reconciler.cli.terminal import run
    from reconciler.inventory.session import read_live as session

    config = settings.api_config(insecure=insecure)
    return run(session(config, settings.organization, fetch, need_org=need_org))


# -- export ---------------------------------------------------------------------------------


@click.command("export")
@click.option("--service", metavar="NAME|ID", help="Export the pipes of this service.")
@click.option(
    "--pipe",
    "pipe_ids",
    multiple=True,
    metavar="ID",
    help="Only these pipes (repeatable; default: every pipe of the service).",
)
@click.option(
    "--organization-manifest",
    "--org",
    "with_organization",
    is_flag=True,
    help="Export the organization (name, private endpoints).",
)
@click.option("--dashboards", "with_dashboards", is_flag=True, help="Export the dashboards.")
@click.option(
    "--endpoints",
    "with_endpoints",
    is_flag=True,
    help="Also export the reverse private endpoints of the --service (one manifest each).",
)
@click.option(
    "--cdc-scaling",
    "with_cdc_scaling",
    is_flag=True,
    help="Also export the CDC capacity of the --service (when it has one).",
)
@click.option(
    "--with-expectations",
    is_flag=True,
    help="Also write read-only fields (state, scaling, brokers, …) as expectations.",
)
@click.option(
    "--by-name",
    is_flag=True,
    help="Pipes bound by name, not id: no pipeId nor organizationId, the service by name, and "
    "the create-time fields, so the manifests can create the pipes in another organization.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@path_option("--dir", "out_dir", "Directory to write manifests into.", directory=True)
@click.option(
    "--output-dir", "legacy_dir", type=click.Path(file_okay=False), hidden=True
)  # deprecated spelling of --dir
@click.option(
    "--output",
    "-o",
    "output",
    default="text",
    show_default=True,
    metavar="[text|json]",
    is_eager=True,
    callback=remember_output,
    help="Output format of the report (`-o DIR` is a deprecated spelling of --dir).",
)
@setting_option("organization")
@connection_options
@pass_settings
def export(
    settings: Settings,
    insecure: bool,
    service: str | None,
    pipe_ids: tuple[str, ...],
    with_organization: bool,
    with_dashboards: bool,
    with_endpoints: bool,
    with_cdc_scaling: bool,
    with_expectations: bool,
    by_name: bool,
    force: bool,
    out_dir: str | None,
    legacy_dir: str | None,
    output: str,
) -> int:
    """Write manifests for live objects (into --dir) that validate and plan to no changes."""
    import json

    from reconciler.inventory import export as ex
    from reconciler.model.errors import ConfigError

    typed = click.get_current_context().get_parameter_source("output") is not (
        click.core.ParameterSource.DEFAULT
    )
    directory, output = _export_dir(out_dir, legacy_dir, output, typed=typed)
    options = ex.ExportOptions(
        service=service,
        pipe_ids=pipe_ids,
        organization=with_organization,
        dashboards=with_dashboards,
        endpoints=with_endpoints,
        cdc_scaling=with_cdc_scaling,
        with_expectations=with_expectations,
        by_name=by_name,
    )
    if not (options.service or options.organization or options.dashboards):
        raise ConfigError(
            "nothing to export: give --service, --organization-manifest or --dashboards"
        )
    if options.pipe_ids and not options.service:
        raise ConfigError("--pipe needs --service")
    if (options.endpoints or options.cdc_scaling) and not options.service:
        flag = "--endpoints" if options.endpoints else "--cdc-scaling"
        raise ConfigError(f"{flag} needs --service")
    documents = read_live(
        settings,
        insecure,
        lambda client, org: ex.collect(client, org, options),
        need_org=bool(options.service or options.organization),
    )
    written = ex.write_documents(documents, directory, force=force)
    if output == "json":
        body = {
            "formatVersion": 1,
            "exitCode": 0,
            "directory": str(directory),
            "written": [str(p) for p in written],
        }
        click.echo(json.dumps(body, indent=2))
        return 0
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(
        f"Exported {len(written)} manifest{'s' if len(written) != 1 else ''} to {directory}; "
        f"check with: reconcile plan {directory} --detailed-exitcode"
    )
    return 0


EXPORT_FORMATS = ("text", "json")


def _export_dir(
    given: str | None, legacy: str | None, output: str, *, typed: bool = True
) -> tuple[Any, str]:
    """Return (directory, format), keeping the old spellings working with a deprecation line.

    ``-o`` used to name the directory; it is now the output format, as in every command. A
    value that is not a format is still taken as the directory (with a warning on stderr); a
    format given without ``--dir`` is an error that says how to name a directory called so.
    """
    from pathlib import Path

    from reconciler.model.errors import ConfigError

    if legacy is not None:
        click.echo("warning: --output-dir is deprecated: use --dir", err=True)
        given = given or legacy
    if output not in EXPORT_FORMATS:
        if given is not None:
            raise ConfigError(
                f"-o/--output is the output format ({' or '.join(EXPORT_FORMATS)}), not {output!r}"
            )
        click.echo(
            f"warning: `export -o DIR` is deprecated: -o/--output is the output format in every "
            f"command; use --dir {output}",
            err=True,
        )
        return Path(output), "text"
    if given is None:
        if not typed:  # no -o on the command line: nothing to explain about it
            raise ConfigError("export needs --dir DIR: the directory to write manifests into")
        raise ConfigError(
            f"export needs --dir DIR (-o {output} is the output format; for a directory named "
            f"{output!r} write --dir {output})"
        )
    return Path(given), output


# -- check ----------------------------------------------------------------------------------

# A finding (stale backups) is not an error: automation must tell it from a check that could not
# run (exit 1, like every error), as `plan --detailed-exitcode` tells drift (2) from errors.
STALE_BACKUPS = FINDING_EXIT_CODE


@click.group("check")
def check() -> None:
    """Health checks for cron: exit 0 when healthy, 2 when a finding is reported, 1 when the
    check could not run."""


@check.command("backups")
@click.option(
    "--max-age", required=True, metavar="DURATION", help="Newest done backup at most this old."
)
@click.option(
    "--service",
    "service_refs",
    multiple=True,
    metavar="NAME|ID",
    help="Services to check (repeatable; default: every service).",
)
@output_option("table", "json", machine=True)
@setting_option("organization")
@connection_options
@metrics_option("check_backups")
@pass_settings
def check_backups(
    settings: Settings,
    insecure: bool,
    max_age: str,
    service_refs: tuple[str, ...],
    output: str,
) -> int:
    """Exit 0 when every selected service has a `done` backup newer than --max-age.

    \b
    Exit codes: 0 every backup fresh, 2 a service's backups are stale (the finding),
    1 the check could not run (unknown service, API or connection error).
    """
    import json
    from datetime import UTC, datetime

    from reconciler.inventory import reads, views
    from reconciler.inventory.reads import parse_duration
    from reconciler.plan.render import table

    max_age_text = max_age
    limit = parse_duration(max_age_text)
    results = read_live(
        settings,
        insecure,
        lambda client, org: reads.backup_freshness(
            client, org, service_refs, max_age=limit, now=datetime.now(UTC)
        ),
    )
    stale = [r for r in results if not r.ok]
    code = STALE_BACKUPS if stale else 0
    note({"fresh": len(results) - len(stale), "stale": len(stale)})
    if output == "json":
        body = {
            "formatVersion": 1,
            "exitCode": code,
            "ok": not stale,
            "maxAgeSeconds": int(limit.total_seconds()),
            "services": [r.to_dict() for r in results],
        }
        click.echo(json.dumps(body, indent=2))
    else:
        click.echo(table(views.freshness_rows(results), views.FRESHNESS_HEADERS), nl=False)
        if stale:
            click.echo(
                f"\n{len(stale)} of {len(results)} services have no done backup newer than {max_age_text}:"
            )
            for item in stale:
                click.echo(f"  STALE {views.offender_line(item)}")
        else:
            click.echo(
                f"\nAll {len(results)} services have a done backup newer than {max_age_text}."
            )
    return code
