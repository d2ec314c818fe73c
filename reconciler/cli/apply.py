"""``reconcile apply``: make the live state match the manifests (or a saved plan)."""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reconciler.cli.common import Connection, Seconds, lock_timeout_option, output_option
from reconciler.cli.metrics import metrics_option
from reconciler.cli.plan import ManifestOptions, plan_options
from reconciler.metrics import note_apply, note_plan
from reconciler.settings import NO_PATHS

if TYPE_CHECKING:
    from reconciler.apply.run import ApplyResult
    from reconciler.plan.actions import Plan
    from reconciler.plan.scope import Scope


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
@click.option(
    "--wait-timeout",
    # ``waiting.DEFAULT_WAIT_TIMEOUT``, spelled here: --help must not import the core (tested).
    default=600.0,
    show_default=True,
    envvar="RECONCILE_WAIT_TIMEOUT",
    type=Seconds(),
    help="Seconds to wait for each pipe's state (env RECONCILE_WAIT_TIMEOUT).",
)
@click.option(
    "--all-envs",
    is_flag=True,
    hidden=True,
    help="Refused: apply takes exactly one environment (--env NAME).",
)
@lock_timeout_option()
@metrics_option("apply")
def apply(
    manifests: ManifestOptions,
    connection: Connection,
    plan_file: str | None,
    auto_approve: bool,
    partial: bool,
    output: str,
    wait: bool,
    wait_timeout: float,
    all_envs: bool,
    lock_timeout: float,
) -> int:
    """Apply the changes that make the live state match PATHS (or --plan FILE)."""
    from reconciler.cli.common import use_color
    from reconciler.cli.environments import announce_environment
    from reconciler.model.errors import ConfigError

    if all_envs:
        raise ConfigError(
            "apply takes exactly one environment, each with its own approval: run "
            "`reconcile apply --env NAME` once per environment (plan --all-envs shows them all)"
        )
    announce_environment()

    if not plan_file and not manifests.paths:
        raise ConfigError(f"{NO_PATHS}, or give --plan FILE")
    color = use_color()
    text_out = output == "text"
    saved = _saved_plan(plan_file)
    scope = manifests.scope(manifests.paths or (saved.manifest_paths if saved else ()))
    sending: list[bool] = []
    try:
        flags = _Flags(auto_approve, partial, text_out, color, wait, wait_timeout, lock_timeout)
        result = _apply(scope, manifests, connection, saved, flags, sending)
    except KeyboardInterrupt as exc:
        # Once sending has begun the apply reports its own interruption (the usual summary);
        # an interrupt before that, while reading or at the prompt, sent nothing: say so.
        if sending:
            raise
        raise KeyboardInterrupt(NOTHING_SENT) from exc
    from reconciler.apply.run import ApplyStatus

    if result.status is ApplyStatus.APPLIED:
        note_apply(result, result.plan)
    return _report(result, text_out=text_out, color=color)


def _saved_plan(plan_file: str | None) -> Plan | None:
    """Read ``--plan FILE`` (None without it)."""
    if not plan_file:
        return None
    from reconciler.plan import planfile

    return planfile.load(Path(plan_file))


@dataclass(frozen=True)
class _Flags:
    """The apply command's own choices, as ``_apply`` takes them."""

    auto_approve: bool
    partial: bool
    text_out: bool
    color: bool
    wait: bool
    wait_timeout: float
    lock_timeout: float


def _apply(
    scope: Scope,
    manifests: ManifestOptions,
    connection: Connection,
    saved: Plan | None,
    flags: _Flags,
    sending: list[bool],
) -> ApplyResult:
    """Import the apply stage, then apply with the command line's hooks (prompt, bars, signals)."""
    from reconciler.apply.run import AUTO_APPROVE, ApplyHooks, ApplyRequest, apply_plan
    from reconciler.apply.waiting import WaitOptions
    from reconciler.cli.common import Progress, WaitProgress, run
    from reconciler.plan.render import render_text

    request = ApplyRequest(
        scope=scope,
        options=manifests.plan_options(),
        saved_plan=saved,
        partial=flags.partial,
        lock_timeout=flags.lock_timeout,
        wait=WaitOptions(wait=flags.wait, timeout=flags.wait_timeout),
    )
    config = connection.api_config()

    def show_plan(plan: Plan) -> None:
        note_plan(plan)
        if flags.text_out:
            click.echo(render_text(plan, color=flags.color), nl=False)

    waiting = WaitProgress()
    hooks = ApplyHooks(
        confirm=AUTO_APPROVE if flags.auto_approve else _confirm,
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


def _report(result: ApplyResult, *, text_out: bool, color: bool) -> int:
    """Print what apply did (text, or the one JSON document) and return the exit code."""
    from reconciler.apply.document import results_document
    from reconciler.apply.run import ApplyStatus
    from reconciler.cli.machine import error_entries

    code = result.exit_code
    errors: list[dict[str, Any]] = []
    notes: list[str] = []
    if result.status is ApplyStatus.STALE:
        for key, message in result.stale.items():
            click.echo(f"Error: {message}", err=True)
            errors.append({"type": "StalePlan", "resource": key, "message": message})
        notes.append(
            f"Nothing applied: {len(result.stale)} action(s) are stale. Run plan again, or pass "
            "--partial to apply the others."
        )
        click.echo(notes[-1], err=True)
    elif result.status is ApplyStatus.ALREADY_APPLIED:
        notes = [
            *result.applied.values(),
            "This saved plan was already applied: nothing sent. Run plan again to see what, "
            "if anything, is left to change.",
        ]
        if text_out:
            click.echo("\n".join(notes))
    elif result.status is ApplyStatus.NOTHING_TO_APPLY:
        failed = len(result.plan.failed)
        notes.append(
            f"Nothing applied: {failed} resource{'s have' if failed > 1 else ' has'} errors "
            "(shown above); fix them and apply again."
            if failed
            else "Nothing to apply."
        )
        if text_out:
            click.echo(notes[-1])
    elif result.status is ApplyStatus.CANCELLED:
        notes.append("Apply cancelled; nothing was sent.")
        errors.append({"type": "Cancelled", "message": notes[-1]})
        if text_out:
            click.echo(notes[-1])
    elif text_out:
        click.echo(_results_text(result, color))
    for down in result.stopped:
        errors.append(error_entries(down)[0])
    notes.extend(stopped_lines(result))
    if result.interrupted is not None:
        notes.append(f"Apply interrupted by {result.interrupted.name}: run apply again to finish.")
    if not text_out:
        document = results_document(
            result.results, result.plan, errors=errors, exit_code=code, notes=notes
        )
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    return code


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


def stopped_lines(result: ApplyResult) -> list[str]:
    """One line per interface the run gave up: why, and what was sent, not sent, unknown."""
    from reconciler.apply.results import Outcome
    from reconciler.model.text import MAX_SERVER_MESSAGE, shown

    if not result.stopped:
        return []
    counts = result.counts()
    changes = sum(1 for r in result.results if r.outcome != Outcome.UNCHANGED)
    failed = counts.get(Outcome.FAILED, 0) + counts.get(Outcome.NOT_CONVERGED, 0)
    tally = (
        f"{counts.get(Outcome.APPLIED, 0)} applied, {counts.get(Outcome.SKIPPED, 0)} not sent, "
        f"{counts.get(Outcome.UNCERTAIN, 0)} unknown (may or may not have taken effect)"
        + (f", {failed} failed" if failed else "")
    )
    return [
        f"The {down.interface} API stopped answering: {shown(down.why)}; its last answer: "
        f"{shown(down.last_answer, MAX_SERVER_MESSAGE)}. Of {changes} change(s): {tally}. Run apply again once it answers."
        for down in result.stopped
    ]


def _results_text(result: ApplyResult, color: bool) -> str:
    from reconciler.apply.results import Outcome
    from reconciler.model.text import MAX_SERVER_MESSAGE, shown

    colours = {Outcome.APPLIED: "green", Outcome.UNCHANGED: "white"}
    lines = []
    for action in result.results:
        if action.outcome == Outcome.UNCHANGED and not action.messages:
            continue
        head = f"{action.key}: {action.outcome}"
        lines.append(click.style(head, fg=colours.get(action.outcome, "red")) if color else head)
        for request in action.requests:
            status = request.status if request.status is not None else "-"
            rid = f" requestId {shown(request.request_id)}" if request.request_id else ""
            # Said once: an error the action's own message repeats is left to that message.
            error = shown(request.error, MAX_SERVER_MESSAGE) if request.error else ""
            said = error and any(error in shown(m) for m in action.messages)
            error = f" — {error}" if error and not said else ""
            lines.append(
                f"    {request.method} {request.path} [{request.purpose_text}]: {request.outcome} ({status}){rid}{error}"
            )
        for message in action.messages:
            lines.append(f"    {shown(message)}")
    counts = result.counts()
    order = [o.value for o in Outcome]
    summary = ", ".join(
        f"{counts.get(k, 0)} {k}" for k in order if counts.get(k) or k in ("applied", "failed")
    )
    undone = any(r.failed for r in result.results)
    verdict = "Apply incomplete" if undone else "Apply complete"
    if result.interrupted is not None:
        verdict = f"Apply interrupted by {result.interrupted.name}"
    lines.append(f"{verdict}: {summary}.")
    lines.extend(stopped_lines(result))
    if result.interrupted is not None:
        lines.append("State is saved. Run apply again to finish the job.")
    elif undone and not result.stopped:
        lines.append("Run apply again to finish the job once the errors above are fixed.")
    return "\n".join(lines)
