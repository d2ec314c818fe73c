"""``reconcile plan``: show what apply would change, for people and for machines."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import click

from reconciler.cli.common import api_options, organization_option
from reconciler.cli.completion import complete_targets
from reconciler.cli.metrics import metrics_option, note_plan


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
                shell_complete=complete_targets,
                help="Limit to these resources (glob allowed; repeatable).",
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
@click.option(
    "--lock-timeout",
    default=0.0,
    show_default=True,
    type=float,
    help="Seconds to wait for the state lock (taken only to create a new state for --out).",
)
@metrics_option("plan", success=lambda code: code in (0, 2))
def plan(**kw: Any) -> int:
    """Show the changes that would make the live state match PATHS (files or directories)."""
    from reconciler.cli.common import use_color
    from reconciler.plan import planfile
    from reconciler.plan.render import render_markdown, render_text

    output = kw.pop("output")
    out_file = kw.pop("out_file")
    detailed = kw.pop("detailed_exitcode")
    show_unchanged = kw.pop("show_unchanged")
    lock_timeout = kw.pop("lock_timeout")
    kw_new_state = kw["new_state"]
    result, state, backend = compute(kw)
    note_plan(result)
    if out_file:
        from reconciler.model.errors import StateError
        from reconciler.plan.compute import new_state_creates, new_state_message
        from reconciler.state.backend import create_state

        blind = () if kw_new_state else new_state_creates(result, state)
        if blind:
            # A saved plan is a promise to apply: the guard applies to it now.
            raise StateError(new_state_message(blind, state, refusing=True))
        if not state.exists:
            # The saved plan's secret fingerprints use the state's key: keep it for apply.
            with contextlib.closing(backend):
                create_state(backend, state, timeout=lock_timeout)
        Path(out_file).write_text(planfile.dumps(result), encoding="utf-8")
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
    """Load manifests, read state and live objects; return the plan, state and backend."""
    from reconciler.cli.common import Progress, make_config, open_state_backend, run
    from reconciler.client.api import Client
    from reconciler.load.manifests import load_resources
    from reconciler.plan.compute import PlanOptions, compute_plan
    from reconciler.state.backend import read_state

    paths = list(kw.pop("paths"))
    resources = load_resources(paths, default_organization=kw.pop("organization"), positions=True)
    backend = open_state_backend(kw, paths)
    with contextlib.closing(backend):
        state = read_state(backend)
    options = PlanOptions(
        targets=tuple(kw.pop("targets")),
        replace=kw.pop("replace"),
        prune=kw.pop("prune"),
        new_state=kw.pop("new_state"),
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

    return run(go()), state, backend
