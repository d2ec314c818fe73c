"""Apply results rendered for people and for machines: the home of apply's report.

``report`` turns an ``ApplyResult`` into what a run shows: the lines for stdout (each action's
outcome and requests, then a verdict), the lines for stderr (a stale saved plan's errors),
and, for automation, the one ``apply -o json`` document (``document.results_document``) with
the same notes and errors. A run that gave up on an interface says what was sent, not sent and
unknown (``stopped_lines``). Renderers only build strings; the command prints them. Colour is
added only when the caller asks (``plan.render.ansi``, the codes plans use).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.apply.document import results_document
from reconciler.apply.results import Outcome
from reconciler.apply.run import ApplyResult, ApplyStatus
from reconciler.model.errors import error_entries
from reconciler.model.json import JsonLike
from reconciler.model.text import MAX_SERVER_MESSAGE, shown
from reconciler.plan.render import ansi

__all__ = ["report"]


@dataclass(frozen=True)
class ApplyReport:
    """What a run of apply shows: stdout lines (text output), stderr lines, the JSON document."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    document: dict[str, JsonLike] = field(default_factory=dict)
    exit_code: int = 0


def report(result: ApplyResult, *, color: bool = False) -> ApplyReport:
    """Return what apply shows for ``result`` (text lines, error lines, and the document)."""
    errors: list[dict[str, JsonLike]] = []
    notes: list[str] = []
    out: list[str] = []
    err: list[str] = []
    if result.status is ApplyStatus.STALE:
        for key, message in result.stale.items():
            err.append(f"Error: {message}")
            errors.append({"type": "StalePlan", "resource": key, "message": message})
        notes.append(
            f"Nothing applied: {len(result.stale)} action(s) are stale. Run plan again, or pass "
            "--partial to apply the others."
        )
        err.append(notes[-1])
    elif result.status is ApplyStatus.ALREADY_APPLIED:
        notes = [
            *result.applied.values(),
            "This saved plan was already applied: nothing sent. Run plan again to see what, "
            "if anything, is left to change.",
        ]
        out.append("\n".join(notes))
    elif result.status is ApplyStatus.NOTHING_TO_APPLY:
        notes.append(_nothing_applied(len(result.plan.failed)))
        out.append(notes[-1])
    elif result.status is ApplyStatus.CANCELLED:
        notes.append("Apply cancelled; nothing was sent.")
        errors.append({"type": "Cancelled", "message": notes[-1]})
        out.append(notes[-1])
    else:
        out.append(results_text(result, color))
    for down in result.stopped:
        errors.append(error_entries(down)[0])
    notes.extend(stopped_lines(result))
    if result.interrupted is not None:
        notes.append(f"Apply interrupted by {result.interrupted.name}: run apply again to finish.")
    code = result.exit_code
    document = results_document(
        result.results, result.plan, errors=errors, exit_code=code, notes=notes
    )
    return ApplyReport(out, err, document, code)


def _nothing_applied(failed: int) -> str:
    if not failed:
        return "Nothing to apply."
    return (
        f"Nothing applied: {failed} resource{'s have' if failed > 1 else ' has'} errors "
        "(shown above); fix them and apply again."
    )


def stopped_lines(result: ApplyResult) -> list[str]:
    """One line per interface the run gave up: why, and what was sent, not sent, unknown."""
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


def results_text(result: ApplyResult, color: bool) -> str:
    """Return each action's outcome and requests, then the verdict and what to do next."""
    colours = {Outcome.APPLIED: "green", Outcome.UNCHANGED: "white"}
    lines = []
    for action in result.results:
        if action.outcome == Outcome.UNCHANGED and not action.messages:
            continue
        head = f"{action.key}: {action.outcome}"
        lines.append(ansi(head, fg=colours.get(action.outcome, "red")) if color else head)
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
    lines.append(_verdict(result))
    lines.extend(stopped_lines(result))
    if result.interrupted is not None:
        lines.append("State is saved. Run apply again to finish the job.")
    elif any(r.failed for r in result.results) and not result.stopped:
        lines.append("Run apply again to finish the job once the errors above are fixed.")
    return "\n".join(lines)


def _verdict(result: ApplyResult) -> str:
    """Return ``Apply complete: N applied, …`` (incomplete, or interrupted by a signal)."""
    counts = result.counts()
    summary = ", ".join(
        f"{counts.get(k, 0)} {k}"
        for k in (o.value for o in Outcome)
        if counts.get(k) or k in ("applied", "failed")
    )
    verdict = "Apply incomplete" if any(r.failed for r in result.results) else "Apply complete"
    if result.interrupted is not None:
        verdict = f"Apply interrupted by {result.interrupted.name}"
    return f"{verdict}: {summary}."
