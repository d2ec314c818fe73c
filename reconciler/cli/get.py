"""``reconcile get``: show live objects (read-only) as aligned tables, or JSON/YAML for scripts.

Services, backups, a service's reverse private endpoints (or one), a pipe, a service's pipes,
its CDC capacity, the organization and the dashboards. Every sub-command shares one ``Lookup``
(the run's settings, ``--insecure``, the output format): it makes one core call
(``reconciler.inventory.session.read_live`` with a read of ``inventory.reads``) and prints the
result; secrets are never shown.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reconciler.cli.config import settings_of
from reconciler.cli.inventory import read_live
from reconciler.cli.options import connection_options, output_option, setting_option

if TYPE_CHECKING:
    from reconciler.client.api import Client
    from reconciler.settings import Settings

__all__ = ["Lookup"]


T = TypeVar("T")

_output_option = output_option(
    "table", "json", "yaml", help="Table for people, JSON or YAML for scripts."
)


def _service_option(func: Any) -> Any:
    return click.option("--service", required=True, metavar="NAME|ID", help="Service name or id.")(
        func
    )


def _emit(value: Any, output: str, table: Callable[[], str]) -> None:
    from reconciler.inventory.reads import redact_secrets
    from reconciler.inventory.views import dump

    if output == "table":
        click.echo(table(), nl=False)
    else:
        click.echo(dump(redact_secrets(value), output), nl=False)


@dataclass(frozen=True)
class Lookup:
    """What every ``get`` command shares: the run's settings, ``--insecure``, the output format."""

    settings: Settings
    insecure: bool
    output: str

    def show(
        self,
        fetch: Callable[[Client, str], Awaitable[T]],
        table: Callable[[T], str],
        *,
        need_org: bool = True,
    ) -> int:
        """Read with ``fetch`` and print the result as ``table`` or as JSON/YAML; return 0."""
        found = read_live(self.settings, self.insecure, fetch, need_org=need_org)
        _emit(found, self.output, lambda: table(found))
        return 0

    def show_one(
        self,
        query: Callable[[Client, str, str, str], Awaitable[dict[str, Any]]],
        service: str,
        ref: str,
        details: Callable[[dict[str, Any]], list[tuple[str, str]]],
    ) -> int:
        """Show one object of a service (``query(client, org, service, ref)``) as details."""
        from reconciler.inventory.views import details_text

        return self.show(
            lambda client, org: query(client, org, service, ref),
            lambda found: details_text(details(found)),
        )


def _get_options(func: Any) -> Any:
    """Add the options every ``get`` command shares, handed to it as one ``Lookup``."""

    @functools.wraps(func)
    def wrapper(*args: Any, insecure: bool, output: str, **kwargs: Any) -> Any:
        settings = settings_of(click.get_current_context())
        return func(*args, lookup=Lookup(settings, insecure, output), **kwargs)

    return _output_option(setting_option("organization")(connection_options(wrapper)))


# -- get ------------------------------------------------------------------------------------


@click.group("get")
def get() -> None:
    """Show live objects (read-only): services, backups, endpoints, pipes, CDC capacity, organization, dashboards."""


@get.command("services")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="tag:Key[=Value]",
    help="Keep services with this tag (repeatable; all must match).",
)
@_get_options
def services(lookup: Lookup, filters: tuple[str, ...]) -> int:
    """List the organization's services."""
    from reconciler.inventory import reads, views
    from reconciler.plan.render import table

    return lookup.show(
        lambda client, org: reads.list_services(client, org, filters),
        lambda found: table(views.service_rows(found), views.SERVICE_HEADERS),
    )


@get.command("backups")
@_service_option
@click.option("--since", metavar="DURATION", help="Only backups started within, e.g. 26h or 3d.")
@_get_options
def backups(lookup: Lookup, service: str, since: str | None) -> int:
    """List a service's backups, newest first."""
    from datetime import UTC, datetime

    from reconciler.inventory import reads, views
    from reconciler.inventory.reads import parse_duration
    from reconciler.plan.render import table

    window = parse_duration(since) if since else None
    return lookup.show(
        lambda client, org: reads.service_backups(
            client, org, service, since=window, now=datetime.now(UTC)
        ),
        lambda found: table(views.backup_rows(found), views.BACKUP_HEADERS),
    )


# ``get endpoint ID --service S`` and ``get pipe NAME|ID --service S``: one object of a
# service shown as details: (argument metavar, the read in ``inventory.reads``, the details
# in ``inventory.views``, help).
_ONE_OF_A_SERVICE = {
    "endpoint": (
        "ID",
        "service_endpoint",
        "endpoint_details",
        "Show one reverse private endpoint of a service.",
    ),
    "pipe": (
        "NAME|ID",
        "service_pipe",
        "pipe_details",
        "Show one pipe (a NAME is resolved through the service's pipe list).",
    ),
}


def _one_of_a_service(name: str, metavar: str, read: str, details: str, help: str) -> None:
    """Add ``get NAME REF --service S`` showing one object of a service as details."""

    @get.command(name, help=help)
    @click.argument("ref", metavar=metavar)
    @_service_option
    @_get_options
    def command(lookup: Lookup, service: str, ref: str) -> int:
        from reconciler.inventory import reads, views

        return lookup.show_one(getattr(reads, read), service, ref, getattr(views, details))


for _name, _spec in _ONE_OF_A_SERVICE.items():
    _one_of_a_service(_name, *_spec)


# ``get pipes --service S`` and ``get endpoints --service S``: every object of a kind of a
# service as a table: (the read in ``inventory.reads``, the rows and headers in
# ``inventory.views``, help).
_ALL_OF_A_SERVICE = {
    "pipes": (
        "service_pipes",
        "pipe_rows",
        "PIPE_HEADERS",
        "List every pipe of a service (needs the server's pipe list).",
    ),
    "endpoints": (
        "service_endpoints",
        "endpoint_rows",
        "ENDPOINT_HEADERS",
        "List a service's reverse private endpoints.",
    ),
}


def _all_of_a_service(name: str, read: str, rows: str, headers: str, help: str) -> None:
    """Add ``get NAME --service S`` listing every object of a kind of a service."""

    @get.command(name, help=help)
    @_service_option
    @_get_options
    def command(lookup: Lookup, service: str) -> int:
        from reconciler.inventory import reads, views
        from reconciler.plan.render import table

        return lookup.show(
            lambda client, org: getattr(reads, read)(client, org, service),
            lambda found: table(getattr(views, rows)(found), getattr(views, headers)),
        )


for _name, _list in _ALL_OF_A_SERVICE.items():
    _all_of_a_service(_name, *_list)


@get.command("cdc-scaling")
@_service_option
@_get_options
def cdc_scaling(lookup: Lookup, service: str) -> int:
    """Show a service's CDC capacity (once it has a database pipe)."""
    from reconciler.inventory import reads, views

    return lookup.show(
        lambda client, org: reads.service_cdc_scaling(client, org, service),
        lambda found: views.details_text(views.cdc_scaling_details(found)),
    )


@get.command("organization")
@_get_options
def organization(lookup: Lookup) -> int:
    """Show the organization (needs the server's organization GET)."""
    from reconciler.inventory import reads, views

    return lookup.show(
        reads.get_organization,
        lambda found: views.details_text(views.organization_details(found)),
    )


@get.command("dashboards")
@_get_options
def dashboards(lookup: Lookup) -> int:
    """List the dashboards (needs the server's dashboard list)."""
    from reconciler.inventory import reads, views
    from reconciler.plan.render import table

    # Dashboards belong to the token's organization: no organization id is needed.
    return lookup.show(
        lambda client, org: reads.get_dashboards(client),
        lambda found: table(views.dashboard_rows(found), views.DASHBOARD_HEADERS),
        need_org=False,
    )
