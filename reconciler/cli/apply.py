"""``reconcile apply``: make the live state match the manifests (or a saved plan).

The command parses its options, makes one core call (``apply.run.apply_plan``) with the
command line's hooks (the prompt, progress bars, signals) and prints the report
``apply.report`` renders.
"""

from __future__ import annotations

import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.metrics import metrics_option
from reconciler.cli.options import output_option, setting_option
from reconciler.cli.plan import PlanFlags, plan_options
from reconciler.metrics import note_apply, note_plan
from reconciler.settings import NO_PATHS

if TYPE_CHECKING:
    from reconciler.apply.run import ApplyResult
    from reconciler.plan.actions import Plan
    from reconciler.plan.scope import Scope
    from reconciler.settings import Settings

__all__ = ["apply"]


# What ``reconcile.cli.main`` adds to "Interrupted by SIGINT" when apply had sent nothing.
NOTHING_SENT = "before anything was sent"


def _apply_options(func: Any) -> Any:
    return plan_options(func)


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
@output_option(
    "text",
    "json",
    machine=True,
    help="text, or json: one document on stdout, also on errors (schemas/apply-result.schema.json).",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="After a state command or a create, wait until each pipe reaches its desired state "
    "(a failed state is an error). A state a later request needs (Paused before a "
    "table-mapping edit) is waited for either way.",
)
@setting_option("wait_timeout")
@click.option(
    "--all-envs",
    is_flag=True,
    hidden=True,
    help="Refused: apply takes exactly one environment (--env NAME).",
)
@setting_option("lock_timeout")
@metrics_option("apply")
@pass_settings
def apply(
    settings: Settings,
    flags: PlanFlags,
    insecure: bool,
    plan_file: str | None,
    auto_approve: bool,
    partial: bool,
    output: str,
    wait: bool,
    all_envs: bool,
) -> int:
    """Apply the changes that make the live state match PATHS (or --plan FILE)."""
    from reconciler.cli.config import warn_legacy_state
    from reconciler.cli.environments import announce_environment
    from reconciler.cli.terminal import use_color
    from reconciler.model.errors import ConfigError

    if all_envs:
        raise ConfigError(
            "apply takes exactly one environment, each with its own approval: run "
            "`reconcile apply --env NAME` once per environment (plan --all-envs shows them all)"
        )
    announce_environment()
    if not plan_file and not settings.manifests:
        raise ConfigError(f"{NO_PATHS}, or give --plan FILE")
    saved = _saved_plan(plan_file)
    paths = settings.manifests or (saved.manifest_paths if saved else ())
    warn_legacy_state(settings, paths)
    scope = settings.scope(paths)
    choices = _Choices(auto_approve, partial, output == "text", use_color(), wait, insecure)
    sending: list[bool] = []
    try:
        result = _apply(scope, settings, flags, saved, choices, sending)
    except KeyboardInterrupt as exc:
        # Once sending has begun the apply reports its own interruption (the usual summary);
        # an interrupt before that, while reading or at the prompt, sent nothing: say so.
        if sending:
            raise
        raise KeyboardInterrupt(NOTHING_SENT) from exc
    from reconciler.apply.report import report
    from reconciler.apply.run import ApplyStatus

    if result.status is ApplyStatus.APPLIED:
        note_apply(result, result.plan)
    shown = report(result, color=choices.color)
    for line in shown.stderr:
        click.echo(line, err=True)
    if choices.text_out:
        for line in shown.stdout:
            click.echo(line)
    else:
        import json

        click.echo(json.dumps(shown.document, indent=2, ensure_ascii=False))
    return shown.exit_code


def _saved_plan(plan_file: str | None) -> Plan | None:
    """Read ``--plan FILE`` (None without it)."""
    if not plan_file:
        return None
    from reconciler.plan import planfile

    return planfile.load(Path(plan_file))


@dataclass(frozen=True)
class _Choices:
    """The apply command's own choices, as ``_apply`` takes them."""

    auto_approve: bool
    partial: bool
    text_out: bool
    color: bool
    wait: bool
    insecure: bool


def _apply(
    scope: Scope,
    settings: Settings,
    flags: PlanFlags,
    saved: Plan | None,
    choices: _Choices,
    sending: list[bool],
) -> ApplyResult:
    """Import the apply stage, then apply with the command line's hooks (prompt, bars, signals)."""
    from reconciler.apply.run import AUTO_APPROVE, ApplyHooks, ApplyRequest, apply_plan
    from reconciler.apply.waiting import WaitOptions
    from reconciler.cli.terminal import Progress, WaitProgress, run
    from reconciler.plan.render import render_text

    request = ApplyRequest(
        scope=scope,
        options=flags.plan_options(settings),
        saved_plan=saved,
        partial=choices.partial,
        lock_timeout=settings.seconds("lock_timeout"),
        wait=WaitOptions(wait=choices.wait, timeout=settings.seconds("wait_timeout")),
    )
    config = settings.api_config(insecure=choices.insecure)

    def show_plan(plan: Plan) -> None:
        note_plan(plan)
        if choices.text_out:
            click.echo(render_text(plan, color=choices.color), nl=False)

    waiting = WaitProgress()
    hooks = ApplyHooks(
        confirm=AUTO_APPROVE if choices.auto_approve else _confirm,
        show_plan=show_plan,
        progress=Progress,
        signals=True,
        notice=lambda message: click.echo(message, err=True),
        waiting=waiting,
        sending=lambda: sending.append(True),
    )
    try:
        return run(apply_plan(config, request, hooks))
    finally:
        waiting.close()


def _confirm(plan: Plan) -> bool:
    from reconciler.model.errors import ConfigError

    if not sys.stdin.isatty():
        raise ConfigError(
            "refusing to apply without confirmation: stdin is not a terminal; pass --auto-approve"
        )
    # The prompt blocks the event loop, where asyncio's Ctrl-C handler would only cancel the
    # task, seen once the prompt returns: while it waits, Ctrl-C (and SIGTERM, which does what
    # SIGINT's handler does) interrupts the prompt itself.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return click.confirm(f"Apply {len(plan.changed)} change(s)?", default=False)
    finally:
        signal.signal(signal.SIGINT, previous)
