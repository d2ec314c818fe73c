"""``reconcile plan``: show what apply would change, for people and for machines."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.common import Connection, api_options, collect, organization_option

if TYPE_CHECKING:
    from reconciler.plan.compute import PlanOptions, Workspace


@dataclass(frozen=True)
class ManifestOptions:
    """The flags plan and apply share: what to reconcile, and which state to use."""

    paths: tuple[str, ...]
    targets: tuple[str, ...]
    state_path: str | None
    replace: bool
    prune: bool
    organization: str | None

    def workspace(self, paths: tuple[str, ...] | None = None) -> Workspace:
        """Return the workspace (``paths`` overrides the given ones, e.g. a saved plan's)."""
        from reconciler.cli.common import state_path_for
        from reconciler.plan.compute import Workspace

        chosen = self.paths if paths is None else paths
        return Workspace(chosen, state_path_for(self.state_path, chosen), self.organization)

    def plan_options(self) -> PlanOptions:
        """Return the choices that change what the plan contains."""
        from reconciler.plan.compute import PlanOptions

        return PlanOptions(targets=self.targets, replace=self.replace, prune=self.prune)


def plan_options(func: Any, *, paths_required: bool = True) -> Any:
    """Add the options shared by plan and apply, handed to the command as ``manifests``."""
    func = collect("manifests", ManifestOptions, tuple(f.name for f in fields(ManifestOptions)))(
        func
    )
    for option in reversed(
        [
            click.argument("paths", nargs=-1, required=paths_required, type=click.Path()),
            click.option(
                "--target",
                "targets",
                multiple=True,
                metavar="KIND/NAME",
                help="Limit to these resources (glob allowed; repeatable).",
            ),
            click.option(
                "--state",
                "state_path",
                type=click.Path(),
                help="State file [default: .reconcile/state.json in the project root: the nearest directory upwards with reconcile.yaml or .reconcile/, else the git top, else the current one].",
            ),
            click.option(
                "--replace",
                is_flag=True,
                help="Create a new dashboard when one cannot be updated in place.",
            ),
            click.option(
                "--prune",
                is_flag=True,
                help="Delete dashboards this tool created whose manifests were removed.",
            ),
        ]
    ):
        func = option(func)
    return organization_option(api_options(func))


@click.command("plan")
@plan_options
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    help="Save the plan (JSON, redacted) for `apply --plan`.",
)
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when the plan has changes (0 none, 1 error)."
)
@click.option("--show-unchanged", is_flag=True, help="List unchanged resources too (text output).")
def plan(
    manifests: ManifestOptions,
    connection: Connection,
    output: str,
    out_file: str | None,
    detailed_exitcode: bool,
    show_unchanged: bool,
) -> int:
    """Show the changes that would make the live state match PATHS (files or directories)."""
    from reconciler.cli.common import Progress, run, use_color
    from reconciler.plan import planfile
    from reconciler.plan.compute import compute_plan
    from reconciler.plan.render import render_markdown, render_text

    workspace = manifests.workspace()
    config = connection.api_config()
    computed = run(compute_plan(config, workspace, manifests.plan_options(), progress=Progress))
    result = computed.plan
    if out_file:
        planfile.save(computed, Path(out_file))
    if output == "json":
        click.echo(planfile.dumps(result), nl=False)
    elif output == "markdown":
        click.echo(render_markdown(result), nl=False)
    else:
        click.echo(render_text(result, color=use_color(), show_unchanged=show_unchanged), nl=False)
        if out_file:
            click.echo(
                f"Saved the plan to {out_file}; apply it with: reconcile apply --plan {out_file}"
            )
    if result.failed:
        return 1
    if detailed_exitcode and result.changed:
        return 2
    return 0
