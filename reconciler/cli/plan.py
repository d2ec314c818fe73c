"""``reconcile plan``: show what apply would change, for people and for machines."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.completion import complete_targets
from reconciler.cli.config import pass_settings
from reconciler.cli.metrics import metrics_option
from reconciler.cli.options import (
    connection_options,
    output_option,
    path_option,
    setting_option,
    setting_options,
)
from reconciler.metrics import note_plan

if TYPE_CHECKING:
    from reconciler.plan.compute import PlanOptions
    from reconciler.settings import Settings

__all__: list[str] = []


@dataclass(frozen=True)
class PlanFlags:
    """The flags plan and apply share that are not settings: what the plan may contain."""

    targets: tuple[str, ...]
    new_state: bool
    replace: bool
    prune: bool

    def plan_options(self, settings: Settings) -> PlanOptions:
        """Return the choices that change what the plan contains."""
        from reconciler.plan.compute import PlanOptions

        return PlanOptions(
            targets=self.targets,
            replace=self.replace,
            prune=self.prune,
            new_state=self.new_state,
            organization_source=settings.origin("organization") or PlanOptions.organization_source,
        )


def _prepare_out(path: Path) -> None:
    """Create ``--out``'s directory and check it is writable before any request is made."""
    from reconciler.model.errors import ConfigError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"--out {path}: cannot create its directory {path.parent} ({exc.strerror or exc})"
        ) from None
    if path.is_dir() or not os.access(path.parent, os.W_OK):
        raise ConfigError(f"--out {path}: not a writable file path")


def plan_options(func: Any, *, paths_required: bool = False) -> Any:
    """Add the options shared by plan and apply; the flags that are not settings are handed
    to the command as ``flags``, ``--insecure`` as ``insecure``."""
    names = tuple(f.name for f in fields(PlanFlags))
    func = _collect_flags(names)(func)
    for option in reversed(
        [
            click.argument("paths", nargs=-1, required=paths_required, type=click.Path()),
            click.option(
                "--target",
                "targets",
                multiple=True,
                metavar="KIND/NAME",
                shell_complete=complete_targets,
                help="Limit to these resources (glob allowed; repeatable). With apply --plan: apply only the saved plan's matching actions.",
            ),
            setting_options("state_path", "workspace"),
            click.option(
                "--new-state",
                is_flag=True,
                help="Confirm that a new (empty) state is expected: allows creating dashboards "
                "a server that cannot list them may already have.",
            ),
            click.option(
                "--replace",
                is_flag=True,
                help="Replace what cannot be changed in place: delete and re-create a pipe "
                "whose create-time fields differ (never a pinned pipeId; ingestion restarts), "
                "create a new dashboard when one cannot be updated.",
            ),
            click.option(
                "--prune",
                is_flag=True,
                help="Delete pipes and dashboards this tool created whose manifests were "
                "removed (never pinned or adopted ones; only when the paths cover every "
                "manifest of that kind in the project).",
            ),
        ]
    ):
        func = option(func)
    return setting_option("organization")(connection_options(func))


def _collect_flags(names: tuple[str, ...]) -> Any:
    """Hand a command the values of ``names`` as one ``PlanFlags``, in its parameter ``flags``."""
    import functools

    def decorator(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            return func(*args, flags=PlanFlags(**values), **kwargs)

        return wrapper

    return decorator


@click.command("plan")
@plan_options
@output_option(
    "text",
    "json",
    "markdown",
    machine=True,
    help="text, json (one document on stdout, also on errors: schemas/plan.schema.json) or "
    "markdown (for pull-request comments, errors included).",
)
@path_option("--out", "out_file", "Save the plan (JSON, redacted) for `apply --plan`.")
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the plan has changes (0 none, 1 error)."
)
@click.option("--show-unchanged", is_flag=True, help="List unchanged resources too (text output).")
@click.option(
    "--all-envs",
    is_flag=True,
    help="Plan every environment of the project file in one run, each against its own API, "
    "key and state (one section per environment; exit 1 if any failed).",
)
@setting_option(
    "lock_timeout",
    help="Seconds to wait for the state lock (taken only to create a new state for --out)",
)
@metrics_option("plan")
@pass_settings
def plan(
    settings: Settings,
    flags: PlanFlags,
    insecure: bool,
    output: str,
    out_file: str | None,
    detailed_exitcode: bool,
    show_unchanged: bool,
    all_envs: bool,
) -> int:
    """Show the changes that would make the live state match PATHS (files or directories)."""
    if all_envs:
        return _plan_all(
            flags.plan_options(settings), insecure, output, out_file, detailed_exitcode
        )
    from reconciler.cli.config import warn_legacy_state
    from reconciler.cli.environments import announce_environment
    from reconciler.cli.terminal import Progress, run

    announce_environment()
    warn_legacy_state(settings)
    scope = settings.scope()
    from reconciler.plan.run import compute_plan, save_plan

    config = settings.api_config(insecure=insecure)
    if out_file:
        _prepare_out(Path(out_file))
    options = flags.plan_options(settings)
    computed = run(compute_plan(config, scope, options, progress=Progress))
    result = computed.plan
    note_plan(result)
    if out_file:
        wait = settings.seconds("lock_timeout")
        save_plan(computed, Path(out_file), new_state=flags.new_state, lock_timeout=wait)
    code = 1 if result.failed else 2 if detailed_exitcode and result.changed else 0
    _render(result, output, code, show_unchanged, out_file)
    return code


def _render(
    result: Any, output: str, code: int, show_unchanged: bool, out_file: str | None
) -> None:
    """Print the plan as ``output`` asks (and, for people, where it was saved)."""
    from reconciler.cli.terminal import use_color
    from reconciler.plan import planfile
    from reconciler.plan.render import render_markdown, render_text

    if output == "json":
        click.echo(planfile.dumps(result, exit_code=code), nl=False)
    elif output == "markdown":
        click.echo(render_markdown(result), nl=False)
    else:
        click.echo(render_text(result, color=use_color(), show_unchanged=show_unchanged), nl=False)
        if out_file:
            click.echo(
                f"Saved the plan to {out_file}; apply it with: reconcile apply --plan {out_file}"
            )


def _plan_all(
    options: PlanOptions,
    insecure: bool,
    output: str,
    out_file: str | None,
    detailed_exitcode: bool,
) -> int:
    """``plan --all-envs``: every environment in one run, one report."""
    import json

    from reconciler.cli.environments import targets
    from reconciler.cli.terminal import Progress, run, use_color
    from reconciler.model.errors import ConfigError
    from reconciler.plan import environments as envs

    if out_file:
        raise ConfigError(
            "--out saves the plan of one environment: use --env NAME with --out (a saved plan "
            "is applied to one environment)"
        )
    given = click.get_current_context().find_root().meta.get("reconcile.args", [])
    if any(a == "--env" or a.startswith("--env=") for a in given):
        raise ConfigError("--all-envs plans every environment: leave out --env")
    plans = run(envs.compute_plans(targets(insecure), options, progress=Progress))
    # The run's metrics count every environment's resources (one record per run).
    note_plan(envs.combined(plans))
    code = envs.exit_code(plans, detailed_exitcode)
    if output == "json":
        click.echo(json.dumps(envs.to_json(plans, code), indent=2, ensure_ascii=False))
    elif output == "markdown":
        click.echo(envs.render_markdown(plans), nl=False)
    else:
        click.echo(envs.render_text(plans, color=use_color()), nl=False)
    return code
