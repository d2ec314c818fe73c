"""``reconcile apply``: make the live state match the manifests (or a saved plan)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from reconciler.cli.metrics import metrics_option, note_apply, note_plan
from reconciler.cli.plan import plan_options


def _apply_options(func: Any) -> Any:
    return plan_options(func, paths_required=False)


@click.command("apply")
@_apply_options
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(exists=True, dir_okay=False),
    help="Apply a plan saved with `plan --out`.",
)
@click.option(
    "--auto-approve",
    is_flag=True,
    help="Apply without asking (required when stdin is not a terminal).",
)
@click.option(
    "--partial",
    is_flag=True,
    help="With --plan: apply the actions that are not stale even if some are.",
)
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
)
@click.option(
    "--lock-timeout",
    default=0.0,
    show_default=True,
    type=float,
    help="Seconds to wait for the state lock.",
)
@metrics_option("apply")
def apply(**kw: Any) -> int:
    """Apply the changes that make the live state match PATHS (or --plan FILE)."""
    from reconciler.cli.common import use_color
    from reconciler.model.errors import ConfigError

    plan_file = kw.pop("plan_file")
    if not plan_file and not kw["paths"]:
        raise ConfigError("give manifest PATHS, or --plan FILE")
    output = kw.pop("output")
    color = use_color()
    return _run(kw, plan_file, output, color)


def _run(kw: dict[str, Any], plan_file: str | None, output: str, color: bool) -> int:
    from reconciler.apply.applier import Applier
    from reconciler.apply.savedplan import find_stale, secrets_for_saved_plan
    from reconciler.cli.common import Progress, make_config, open_state_backend, run
    from reconciler.client.api import Client
    from reconciler.load.manifests import load_resources
    from reconciler.model.errors import ConfigError, ManifestError, ManifestErrors, StateError
    from reconciler.model.secrets import fingerprint
    from reconciler.plan import planfile
    from reconciler.plan.compute import (
        PlanOptions,
        compute_plan,
        new_state_creates,
        new_state_message,
        resolve_pipe_secrets,
    )
    from reconciler.plan.render import render_text
    from reconciler.state.backend import locked_state

    auto_approve = kw.pop("auto_approve")
    partial = kw.pop("partial")
    lock_timeout = kw.pop("lock_timeout")
    saved = planfile.load(Path(plan_file)) if plan_file else None
    paths = list(kw.pop("paths")) or (list(saved.manifest_paths) if saved else [])
    resources = (
        load_resources(paths, default_organization=kw.pop("organization"), positions=True)
        if paths
        else []
    )
    backend = open_state_backend(kw, paths)
    new_state = kw.pop("new_state")
    options = PlanOptions(
        targets=tuple(kw.pop("targets")),
        replace=kw.pop("replace"),
        prune=kw.pop("prune"),
        new_state=new_state,
    )
    config = make_config(kw)
    text_out = output == "text"

    with contextlib.closing(backend), locked_state(backend, timeout=lock_timeout) as state:

        async def go() -> int:
            async with Client(config) as client:
                stale: dict[str, str] = {}
                secrets: dict[str, Any] = {}
                if saved is not None:
                    the_plan = saved
                    resolved: dict[str, Any] = {}
                    errors: list[ManifestError] = []
                    for resource in resources:
                        if resource.kind == "Pipe":
                            try:
                                resolved[resource.key] = resolve_pipe_secrets(resource)
                            except ManifestError as exc:
                                errors.append(exc)
                    if errors:
                        raise ManifestErrors(errors)
                    secrets = secrets_for_saved_plan(
                        saved, resolved, lambda v: fingerprint(state.key, v)
                    )
                    stale = await find_stale(client, saved)
                    if stale and not partial:
                        for message in stale.values():
                            click.echo(f"Error: {message}", err=True)
                        click.echo(
                            f"Nothing applied: {len(stale)} action(s) are stale. Run plan again, or pass --partial "
                            "to apply the others.",
                            err=True,
                        )
                        return 1
                else:
                    progress = Progress("reading live state")
                    try:
                        the_plan = await compute_plan(
                            client,
                            resources,
                            state,
                            options,
                            manifest_paths=paths,
                            progress=progress,
                        )
                    finally:
                        progress.close()
                note_plan(the_plan)
                if text_out:
                    click.echo(render_text(the_plan, color=color), nl=False)
                blind = () if new_state else new_state_creates(the_plan, state)
                if blind:
                    raise StateError(new_state_message(blind, state, refusing=True))
                if not the_plan.changed:
                    if text_out:
                        click.echo("Nothing to apply.")
                    else:
                        click.echo(json.dumps(_results_json([], the_plan), indent=2))
                    return 1 if the_plan.failed else 0
                if not auto_approve:
                    if not sys.stdin.isatty():
                        raise ConfigError(
                            "refusing to apply without confirmation: stdin is not a terminal; pass --auto-approve"
                        )
                    if not click.confirm(
                        f"Apply {len(the_plan.changed)} change(s)?", default=False
                    ):
                        click.echo("Apply cancelled; nothing was sent.")
                        return 1
                progress = Progress("applying", total=len(the_plan.actions), unit="action")
                try:
                    applier = Applier(client, state, secrets=secrets, progress=progress)
                    report = await applier.apply(the_plan, stale=stale)
                finally:
                    progress.close()
                note_apply(report, the_plan)
                if text_out:
                    click.echo(_results_text(report, color))
                else:
                    click.echo(json.dumps(_results_json(report.results, the_plan), indent=2))
                return 1 if report.failed or the_plan.failed else 0

        return run(go())


def _results_text(report: Any, color: bool) -> str:
    from reconciler.apply.applier import Outcome

    colours = {Outcome.APPLIED: "green", Outcome.UNCHANGED: "white"}
    lines = []
    for result in report.results:
        if result.outcome == Outcome.UNCHANGED and not result.messages:
            continue
        head = f"{result.key}: {result.outcome}"
        lines.append(click.style(head, fg=colours.get(result.outcome, "red")) if color else head)
        for request in result.requests:
            status = request.status if request.status is not None else "-"
            rid = f" requestId {request.request_id}" if request.request_id else ""
            error = f" — {request.error}" if request.error else ""
            lines.append(
                f"    {request.method} {request.path} [{request.purpose}]: {request.outcome} ({status}){rid}{error}"
            )
        for message in result.messages:
            lines.append(f"    {message}")
    counts = report.counts()
    order = ["applied", "unchanged", "failed", "skipped", "stale", "not-converged", "uncertain"]
    summary = ", ".join(
        f"{counts.get(k, 0)} {k}" for k in order if counts.get(k) or k in ("applied", "failed")
    )
    verdict = "Apply incomplete" if report.failed else "Apply complete"
    lines.append(f"{verdict}: {summary}.")
    if report.failed:
        lines.append("Run apply again to finish the job once the errors above are fixed.")
    return "\n".join(lines)


def _results_json(results: Any, plan: Any) -> dict[str, Any]:
    return {
        "formatVersion": 1,
        "summary": _count(results),
        "planErrors": [{"resource": a.key, "errors": list(a.errors)} for a in plan.failed],
        "results": [
            {
                "resource": r.key,
                "operation": r.operation,
                "outcome": r.outcome,
                "messages": list(r.messages),
                "requests": [
                    {
                        "method": q.method,
                        "path": q.path,
                        "purpose": q.purpose,
                        "status": q.status,
                        "requestId": q.request_id,
                        "outcome": q.outcome,
                        "error": q.error,
                    }
                    for q in r.requests
                ],
            }
            for r in results
        ],
    }


def _count(results: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in results:
        out[r.outcome] = out.get(r.outcome, 0) + 1
    return out
