"""``reconcile plan``: show what apply would change, for people and for machines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from reconciler.cli.common import api_options, organization_option


def plan_options(func: Any, *, paths_required: bool = True) -> Any:
    """Add the options shared by plan and apply."""
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
def plan(**kw: Any) -> int:
    """Show the changes that would make the live state match PATHS (files or directories)."""
    from reconciler.cli.common import use_color
    from reconciler.plan import planfile
    from reconciler.plan.render import render_markdown, render_text

    output = kw.pop("output")
    out_file = kw.pop("out_file")
    detailed = kw.pop("detailed_exitcode")
    show_unchanged = kw.pop("show_unchanged")
    result, state = compute(kw)
    if out_file:
        Path(out_file).write_text(planfile.dumps(result), encoding="utf-8")
        if not state.exists:
            # The saved plan's secret fingerprints use the state's key: keep it for apply.
            state.save()
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
    if detailed and result.changed:
        return 2
    return 0


def compute(kw: dict[str, Any]) -> Any:
    """Load manifests, read state and live objects, and return the plan (consumes ``kw``)."""
    from reconciler.cli.common import Progress, make_config, run, state_path_for
    from reconciler.client.api import Client
    from reconciler.load.manifests import load_resources
    from reconciler.plan.compute import PlanOptions, compute_plan
    from reconciler.state.local import load_state

    paths = list(kw.pop("paths"))
    resources = load_resources(paths, default_organization=kw.pop("organization"), positions=True)
    state_path = state_path_for(kw.pop("state_path"), paths)
    state = load_state(state_path)
    options = PlanOptions(
        targets=tuple(kw.pop("targets")), replace=kw.pop("replace"), prune=kw.pop("prune")
    )
    config = make_config(kw)

    async def go() -> Any:
        progress = Progress("reading live state")
        try:
            async with Client(config) as client:
                return await compute_plan(
                    client, resources, state, options, manifest_paths=paths, progress=progress
                )
        finally:
            progress.close()

    return run(go()), state
