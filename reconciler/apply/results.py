"""What applying a plan did: one result per action, one per request sent (or not).

Every action ends with one ``Outcome`` — applied, unchanged, failed (with the API error),
skipped (an earlier request of the same action failed), stale (a saved plan whose live basis
moved), not converged (the answer does not show the desired values) or uncertain (a create
whose answer was lost and cannot be checked). Renderers, metrics and ``apply -o json`` read
these; ``FAILURES`` are the outcomes that leave work undone (a later apply finishes it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from reconciler.client.api import RequestRecord
from reconciler.model.apierrors import ApiError, Delivery, InterfaceDown
from reconciler.plan.actions import Action, Op, Purpose, Request
from reconciler.plan.runstate import command_of

__all__ = ["ActionResult", "Outcome"]


class Outcome(StrEnum):
    """How an action ended."""

    APPLIED = "applied"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    SKIPPED = "skipped"
    STALE = "stale"
    NOT_CONVERGED = "not-converged"
    UNCERTAIN = "uncertain"


FAILURES = frozenset(
    {Outcome.FAILED, Outcome.SKIPPED, Outcome.STALE, Outcome.NOT_CONVERGED, Outcome.UNCERTAIN}
)


@dataclass(frozen=True)
class RequestResult:
    """What happened to one request."""

    method: str
    path: str
    purpose: Purpose
    status: int | None
    request_id: str | None
    outcome: Outcome
    error: str | None = None
    # What the request asked beyond its purpose: a state command's command (``stop``).
    detail: str | None = None

    @property
    def purpose_text(self) -> str:
        """Say why it was sent: ``state command: stop``, else the purpose."""
        return f"{self.purpose}: {self.detail}" if self.detail else str(self.purpose)


@dataclass(frozen=True)
class ActionResult:
    """What happened to one action."""

    key: str
    operation: Op
    outcome: Outcome
    messages: tuple[str, ...] = ()
    requests: tuple[RequestResult, ...] = ()

    @property
    def failed(self) -> bool:
        """Tell whether this action leaves work undone."""
        return self.outcome in FAILURES


def _detail(request: Request) -> str | None:
    command = command_of(request)
    return str(command) if command is not None else None


def ok(request: Request, record: RequestRecord) -> RequestResult:
    """The result of a request the server accepted."""
    return RequestResult(
        request.method,
        request.path,
        request.purpose,
        record.status,
        record.request_id,
        Outcome.APPLIED,
        detail=_detail(request),
    )


def failed(request: Request, exc: ApiError, outcome: Outcome) -> RequestResult:
    """The result of a request that failed (or whose outcome is unknown), with the API error."""
    return RequestResult(
        request.method,
        request.path,
        request.purpose,
        exc.status,
        exc.request_id,
        outcome,
        exc.message,
        detail=_detail(request),
    )


def may_have_made(exc: ApiError) -> ApiError:
    """Say of a create the server failed on (5xx) that it may have happened: the next run
    adopts it as this tool's own if it shows the body sent (same type and fields)."""
    return type(exc)(
        status=exc.status,
        message=f"{exc.message}; the server may have made it: the next run adopts it if so "
        "(it is never created twice)",
        request_id=exc.request_id,
        code=exc.code,
        resource=exc.resource,
        method=exc.method,
        path=exc.path,
    )


def without_answer(request: Request, outcome: Outcome, note: str) -> RequestResult:
    """The result of a request that got no answer (``note`` says why and what it means)."""
    return RequestResult(
        request.method, request.path, request.purpose, None, None, outcome, note, _detail(request)
    )


def confirmed(request: Request) -> RequestResult:
    """The result of a write whose answer was lost but a re-read showed it took effect."""
    return without_answer(request, Outcome.APPLIED, "answer lost; confirmed by re-reading")


def already_made(request: Request, exc: ApiError) -> RequestResult:
    """The result of a refused write whose edits a re-read showed already made (nothing left)."""
    note = "refused, but a re-read shows its table mapping edits already made"
    return replace(failed(request, exc, Outcome.APPLIED), error=note)


def skipped(
    request: Request, why: str = "an earlier request of this resource failed"
) -> RequestResult:
    """The result of a request not sent (an earlier one of the same resource failed, or
    apply was interrupted: ``why``)."""
    return without_answer(request, Outcome.SKIPPED, why)


def cut_off(
    action: Action, done: list[RequestResult], index: int, exc: InterfaceDown
) -> ActionResult:
    """The result of an action whose interface was given up at its request ``index``."""
    gone = f"the {exc.interface} API stopped answering"
    rest = [skipped(r, f"not sent: {gone}") for r in action.requests[index + 1 :]]
    request = action.requests[index]
    if exc.delivery is Delivery.UNKNOWN:
        note = f"sent, but no answer came before {gone}: it may or may not have taken effect"
        current = without_answer(request, Outcome.UNCERTAIN, note)
        outcome, message = Outcome.UNCERTAIN, note
    else:
        why = "not sent" if exc.delivery is Delivery.NOT_SENT else "not applied (turned away)"
        current = skipped(request, f"{why}: {gone}")
        outcome, message = Outcome.SKIPPED, current.error or why
    if done:
        message = f"{message} (after {index} of {len(action.requests)} requests)"
    return ActionResult(action.key, action.operation, outcome, (message,), (*done, current, *rest))
