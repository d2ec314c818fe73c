"""``reconcile plan``: show what apply would change, for people and for machines."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.common import (
    Connection,
    api_options,
    collect,
    lock_timeout_option,
    organization_option,
    output_option,
    path_option,
)
from reconciler.cli.completion import complete_targets
from reconciler.cli.metrics import metrics_option
from reconciler.metrics import note_plan
from reconciler.settings import NO_PATHS

if TYPE_CHECKING:
    from reconciler.plan.compute import PlanOptions
    from reconciler.plan.scope import Scope


@dataclass(frozen=True)
class ManifestOptions:
    """The flags plan and apply share: what to reconcile, and which state to use."""

    paths: tuple[str, ...]
    targets: tuple[str, ...]
    state_path: str | None
    workspace: str | None
    new_state: bool
    replace: bool
    prune: bool
    organization: str | None

    def scope(self, paths: tuple[str, ...] | None = None) -> Scope:
        """Return the run's scope (``paths`` overrides the given ones, e.g. a saved plan's)."""
        from reconciler.cli.common import origin, state_path_for
        from reconciler.model.errors import ConfigError
        from reconciler.plan.scope import Scope
        from reconciler.state.backend import DEFAULT_WORKSPACE, check_workspace

        chosen = self.paths if paths is None else paths
        if not chosen:
            raise ConfigError(NO_PATHS)
        from reconciler.cli.environments import layering_of_run

        workspace = self.workspace or DEFAULT_WORKSPACE
        try:
            check_workspace(workspace)
        except ConfigError as exc:  # named here, where it is known which setting gave it
            raise ConfigError(f"{origin('workspace') or '--workspace'}: {exc}") from None
        address = self.state_path or str(state_path_for(None, chosen))
        return Scope(
            chosen,
            address,
            workspace,
            self.organization,
            **layering_of_run(),
            state_origin=origin("state_path"),
        )

    def plan_options(self) -> PlanOptions:
        """Return the choices that change what the plan contains."""
        from reconciler.cli.common import origin
        from reconciler.plan.compute import PlanOptions

        return PlanOptions(
            targets=self.targets,
            replace=self.replace,
            prune=self.prune,
            new_state=self.new_state,
            organization_source=origin("organization") or PlanOptions.organization_source,
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
    """Add the options shared by plan and apply, handed to the command as ``manifests``."""
    names = tuple(f.name for f in fields(ManifestOptions))
    func = collect("manifests", ManifestOptions, names)(func)
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
            click.option(
                "--state",
                "state_path",
                envvar="RECONCILE_STATE",
                metavar="PATH|URL",
                help="Where the state lives: a file, postgresql://USER@HOST:PORT/DB or "
                "s3://BUCKET/KEY [default: .reconcile/state.json in the project root: the nearest "
                "directory upwards with reconcile.yaml or .reconcile/, else the git top, else the "
                "current one; env RECONCILE_STATE].",
            ),
            click.option(
                "--workspace",
                envvar="RECONCILE_WORKSPACE",
                default="default",
                show_default=True,
                help="Independent state in the same backend, e.g. one per organization "
                "[env RECONCILE_WORKSPACE].",
            ),
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
    return organization_option(api_options(func))


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
@lock_timeout_option(
    "Seconds to wait for the state lock (taken only to create a new state for --out)."
)
@metrics_option("plan")
def plan(
    manifests: ManifestOptions,
    connection: Connection,
    output: str,
    out_file: str | None,
    detailed_exitcode: bool,
    show_unchanged: bool,
    all_envs: bool,
    lock_timeout: float,
) -> int:
    """Show the changes that would make the live state match PATHS (files or directories)."""
    if all_envs:
        return _plan_all(manifests, connection, output, out_file, detailed_exitcode)
    from reconciler.cli.common import Progress, run, use_color
    from reconciler.cli.environments import announce_environment

    announce_environment()
    scope = manifests.scope()
    from reconciler.plan import planfile
    from reconciler.plan.render import render_markdown, render_text
    from reconciler.plan.run import compute_plan, save_plan

    config = connection.api_config()
    if out_file:
        _prepare_out(Path(out_file))
    options = manifests.plan_options()
    computed = run(compute_plan(config, scope, options, progress=Progress))
    result = computed.plan
    note_plan(result)
    if out_file:
        save_plan(
            computed, Path(out_file), new_state=manifests.new_state, lock_timeout=lock_timeout
        )
    code = 1 if result.failed else 2 if detailed_exitcode and result.changed else 0
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
    return code


def _plan_all(
    manifests: ManifestOptions,
    connection: Connection,
    output: str,
    out_file: str | None,
    detailed_exitcode: bool,
) -> int:
    """``plan --all-envs``: every environment in one run, one report."""
    import json

    from reconciler.cli.common import Progress, run, use_color
    from reconciler.cli.environments import targets
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
    plans = run(
        envs.compute_plans(
            targets(connection.insecure), manifests.plan_options(), progress=Progress
        )
    )
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
