"""Environments on the command line: ``render``, ``compare``, and the helpers of ``--all-envs``.

``render`` prints one environment's effective manifests (base plus its overlays, less its
excludes) as ``kustomize build`` does; ``compare ENV_A ENV_B`` says how two environments'
effective manifests differ. Both read manifests only: nothing is resolved or sent. Each
environment's settings come from the core (``reconciler.settings``) with the same flags, so
``--all-envs`` and ``compare`` see each environment exactly as ``--env NAME`` would.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.options import output_option, setting_option

if TYPE_CHECKING:
    from reconciler.load.overlays import Effective
    from reconciler.plan.environments import Target
    from reconciler.settings import Settings

__all__: list[str] = []


def current_settings() -> Settings | None:
    """Return the run's resolved settings (None when no project was read)."""
    from reconciler.cli.config import settings_of

    ctx = click.get_current_context(silent=True)
    return settings_of(ctx) if ctx is not None else None


def environment_settings(name: str, asked_from: str) -> Settings:
    """Return the settings of environment ``name``, with this run's flags on top."""
    from reconciler.model.errors import ConfigError
    from reconciler.settings import resolve_request

    settings = current_settings()
    if settings is None or settings.project is None:
        raise ConfigError(f"{asked_from} {name}: no project file (reconcile.yaml) was found")
    return resolve_request(replace(settings.request, environment=name, environment_from=asked_from))


def all_environments(flag: str = "--all-envs") -> list[str]:
    """Return the project's environments in the order the project file lists them."""
    from reconciler.model.errors import ConfigError

    settings = current_settings()
    if settings is None or not settings.environments:
        raise ConfigError(
            f"{flag}: the project file defines no environments (add `environments:` to "
            "reconcile.yaml)"
        )
    return list(settings.environments)


def targets(insecure: bool) -> list[Target]:
    """Return a plan target per environment (an environment whose settings fail carries the error)."""
    from reconciler.model.errors import ReconcileError
    from reconciler.plan.environments import Target
    from reconciler.settings.overlap import check_overlaps

    out: list[Target] = []
    for name in all_environments():
        try:
            settings = environment_settings(name, "--all-envs")
            check_overlaps(settings)
            config, scope = settings.api_config(insecure=insecure), settings.scope()
            out.append(Target(name, config, scope, environ=settings.environ))
        except ReconcileError as exc:
            out.append(Target(name, error=exc))
    return out


def effective_of(settings: Settings) -> list[Effective]:
    """Return the effective manifests of the environment ``settings`` chose (or the base)."""
    from reconciler.load.overlays import Layering, load_layered
    from reconciler.model.errors import ConfigError
    from reconciler.settings import NO_PATHS

    if not settings.manifests:
        raise ConfigError(NO_PATHS)
    return load_layered(
        settings.manifests,
        settings.layering() or Layering(),
        default_organization=settings.organization,
    )


@click.command("render")
@click.argument("paths", nargs=-1, type=click.Path())
@output_option("yaml", "json", help="yaml (a stream, as kustomize build prints) or json.")
@setting_option("organization")
@pass_settings
def render(settings: Settings, output: str) -> int:
    """Print the effective manifests of an environment (--env NAME): its overlays applied.

    Each document is headed by the files it came from; secret references print as written.
    """
    from reconciler.load.effective import render_json, render_yaml

    manifests = effective_of(settings)
    if output == "json":
        click.echo(render_json(manifests, settings.environment_name), nl=False)
    else:
        click.echo(render_yaml(manifests), nl=False)
    return 0


@click.command("compare")
@click.argument("env_a", metavar="ENV_A")
@click.argument("env_b", metavar="ENV_B")
@output_option("text", "json", help="text, or json (one document).", machine=True)
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the environments differ (0 same)."
)
def compare(env_a: str, env_b: str, output: str, detailed_exitcode: bool) -> int:
    """Show how ENV_A's effective manifests differ from ENV_B's, resource by resource.

    Read as a promotion: what promoting ENV_A to ENV_B would change in ENV_B's desired state.
    """
    from reconciler.load.effective import (
        compare as compare_effective,
    )
    from reconciler.load.effective import (
        render_comparison_json,
        render_comparison_text,
    )

    left = effective_of(environment_settings(env_a, "compare"))
    right = effective_of(environment_settings(env_b, "compare"))
    result = compare_effective(env_a, left, env_b, right)
    code = 2 if detailed_exitcode and result.differs else 0
    if output == "json":
        click.echo(render_comparison_json(result, code), nl=False)
    else:
        click.echo(render_comparison_text(result), nl=False)
    return code


def announce_environment() -> None:
    """Say on stderr which environment a run targets (nothing without environments), and
    refuse it when another environment of the project would manage the same live objects."""
    from reconciler.settings.overlap import check_overlaps

    settings = current_settings()
    if settings is None or settings.environment is None:
        return
    check_overlaps(settings)
    parts = [f"workspace {settings.workspace}"]
    if settings.organization:
        parts.append(f"organization {settings.organization}")
    click.echo(f"Environment {settings.environment_name}: {', '.join(parts)}", err=True)
