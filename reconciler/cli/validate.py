"""``reconcile validate``: check manifests locally, report every problem at once, send nothing."""

from __future__ import annotations

import json
from typing import Any

import click

from reconciler.cli.common import output_option


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@output_option(
    "text", "json", help="Output format (json: one document, also on errors).", machine=True
)
@click.option(
    "--organization",
    envvar="RECONCILE_ORGANIZATION_ID",
    metavar="ID",
    help="Default organizationId for manifests that omit it [env: RECONCILE_ORGANIZATION_ID].",
)
@click.option(
    "--check-env",
    is_flag=True,
    help="Also resolve every secret reference ({fromEnv}, {fromFile}) as plan would: a missing "
    "or empty variable or an unreadable file is an error (values are never printed).",
)
def validate(paths: tuple[str, ...], output: str, organization: str | None, check_env: bool) -> int:
    """Validate manifests (files or directories) without contacting any server.

    Prints every error as FILE:LINE:COL: PATH: MESSAGE. Exit 0 when all are valid, 1 otherwise.
    """
    from reconciler.cli.machine import error_entries
    from reconciler.load.manifests import load_resources
    from reconciler.model.errors import ManifestErrors
    from reconciler.model.secrets import unresolved

    try:
        resources = load_resources(paths, default_organization=organization)
        missing = unresolved(resources) if check_env else []
        if missing:
            raise ManifestErrors(missing)
    except ManifestErrors as exc:
        errors = exc.errors
        if output == "json":
            click.echo(json.dumps(document(error_entries(exc), [], 1), indent=2))
        else:
            for error in errors:
                click.echo(str(error))
            files = len({e.location.file for e in errors})
            plural = "s" if len(errors) != 1 else ""
            click.echo(f"{len(errors)} error{plural} in {files} file{'s' if files != 1 else ''}")
        return 1
    if output == "json":
        listed = [
            {"kind": r.kind, "name": r.name, "file": r.file, "index": r.index} for r in resources
        ]
        click.echo(json.dumps(document([], listed, 0), indent=2))
        return 0
    from reconciler.model.resources import KINDS

    counts = {kind: sum(1 for r in resources if r.kind == kind) for kind in KINDS}
    detail = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    noun = "manifest" if len(resources) == 1 else "manifests"
    click.echo(f"{len(resources)} {noun} valid ({detail})")
    return 0


def document(
    errors: list[dict[str, Any]], resources: list[dict[str, Any]], exit_code: int
) -> dict[str, Any]:
    """Return ``validate -o json``'s document: ``exitCode`` and typed ``errors[]`` as elsewhere."""
    return {
        "formatVersion": 1,
        "exitCode": exit_code,
        "valid": not errors,
        "errors": errors,
        "resources": resources,
    }
