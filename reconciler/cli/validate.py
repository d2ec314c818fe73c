"""``reconcile validate``: check manifests locally, report every problem at once, send nothing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.options import output_option, setting_option
from reconciler.model.json import JsonObject

if TYPE_CHECKING:
    from reconciler.model.resources import Resource
    from reconciler.settings import Settings

__all__: list[str] = []


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@output_option(
    "text", "json", help="Output format (json: one document, also on errors).", machine=True
)
@setting_option("organization")
@click.option(
    "--check-env",
    is_flag=True,
    help="Also resolve every secret reference ({fromEnv}, {fromFile}) as plan would: a missing "
    "or empty variable or an unreadable file is an error (values are never printed).",
)
@click.option(
    "--all-envs",
    is_flag=True,
    help="Validate the effective manifests of every environment of the project file.",
)
@pass_settings
def validate(settings: Settings, output: str, check_env: bool, all_envs: bool) -> int:
    """Validate manifests (files or directories) without contacting any server.

    With --env NAME, the environment's effective manifests (its overlays applied); with
    --all-envs, every environment's. Prints every error as FILE:LINE:COL: PATH: MESSAGE.
    Exit 0 when all are valid, 1 otherwise. With no PATHS, the manifests the project file names
    (reconcile.yaml `manifests:`).
    """
    from reconciler.cli.machine import error_entries
    from reconciler.load.manifests import load_resources
    from reconciler.load.validation import document
    from reconciler.model.errors import ConfigError, ManifestErrors
    from reconciler.model.secrets import unresolved
    from reconciler.settings import NO_PATHS

    if all_envs:
        return _validate_all(output, check_env)
    paths, organization = settings.manifests, settings.organization
    if not paths:
        raise ConfigError(NO_PATHS)
    layering = settings.layering()
    try:
        if layering:
            from reconciler.load.overlays import load_layered

            effective = load_layered(paths, layering, default_organization=organization)
            resources = [e.resource for e in effective]
        else:
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
        listed: list[JsonObject] = [
            {"kind": r.kind, "name": r.name, "file": r.file, "index": r.index} for r in resources
        ]
        click.echo(json.dumps(document([], listed, 0), indent=2))
        return 0
    click.echo(_valid_line(resources))
    return 0


def _valid_line(resources: list[Resource]) -> str:
    """Return ``N manifests valid (a Pipe, b Dashboard)``."""
    from reconciler.model.resources import KINDS

    counts = {kind: sum(1 for r in resources if r.kind == kind) for kind in KINDS}
    detail = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    noun = "manifest" if len(resources) == 1 else "manifests"
    return f"{len(resources)} {noun} valid ({detail})"


def _validate_all(output: str, check_env: bool) -> int:
    """``validate --all-envs``: each environment's effective manifests, one report."""
    from reconciler.cli.environments import all_environments, effective_of, environment_settings
    from reconciler.model.errors import ManifestErrors, ReconcileError, error_entries
    from reconciler.model.secrets import unresolved

    reports: list[dict[str, Any]] = []
    for name in all_environments():
        try:
            settings = environment_settings(name, "--all-envs")
            effective = effective_of(settings)
            if check_env:  # with this environment's variables (its env file included)
                with settings.secret_variables():
                    missing = unresolved([e.resource for e in effective])
                if missing:
                    raise ManifestErrors(missing)
        except ReconcileError as exc:
            reports.append({"name": name, "valid": False, "errors": error_entries(exc)})
            if output == "text":
                click.echo(f"{name}: invalid")
                for line in str(exc).splitlines():
                    click.echo(f"  {line}")
            continue
        resources = [e.resource for e in effective]
        listed: list[JsonObject] = [
            {"kind": r.kind, "name": r.name, "file": r.file, "index": r.index} for r in resources
        ]
        reports.append({"name": name, "valid": True, "errors": [], "resources": listed})
        if output == "text":
            click.echo(f"{name}: {_valid_line(resources)}")
    code = 0 if all(r["valid"] for r in reports) else 1
    if output == "json":
        body = {"formatVersion": 1, "exitCode": code, "valid": code == 0, "environments": reports}
        click.echo(json.dumps(body, indent=2))
    return code
