"""Sending one action's requests in order: the loop ``Applier`` runs for each changed action.

Each request goes through ``recovery`` (a lost answer or a refused edit is resolved by
re-reading, never by a blind resend); a pipe create is marked in state before it is sent and
recorded the moment its id is known; a state command (and the create before another request)
is waited for through the pipe watcher; an endpoint create is waited for until it is Ready,
then handed to the pipes that name it. The first request that fails ends the action: what was
answered is reported and the rest as not sent (``results``). What the actions of one apply
share (the sets of writes made and waits skipped, the endpoints created) is ``ApplyShared``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reconciler.apply.ordering import creates_endpoint, wait_ready
from reconciler.apply.recorder import StateRecorder
from reconciler.apply.recovery import Recovery
from reconciler.apply.results import (
    ActionResult,
    Outcome,
    RequestResult,
    already_made,
    confirmed,
    cut_off,
    failed,
    may_have_made,
    ok,
    skipped,
)
from reconciler.apply.verify import deferred_endpoint_bodies
from reconciler.apply.waiting import PipeWatcher, WaitOptions, WaitStatus
from reconciler.client.api import OutcomeUnknown
from reconciler.client.paths import PipeIds
from reconciler.model.apierrors import (
    ApiError,
    AuthenticationFailed,
    BadRequest,
    Conflict,
    InterfaceDown,
    NotFound,
)
from reconciler.model.errors import Interrupted
from reconciler.plan.actions import CREATED_ID, Action, Purpose, Request
from reconciler.plan.diff import ChangeKind
from reconciler.plan.runstate import (
    SETTLED_STATES,
    RunState,
    StateCommand,
    command_of,
    is_transitional,
)

__all__: list[str] = []


@dataclass
class ApplyShared:
    """What the actions of one apply share while their requests are sent."""

    recorder: StateRecorder
    recovery: Recovery
    watcher: PipeWatcher
    wait: WaitOptions
    # Actions whose last state command was sent but not waited for (--no-wait).
    not_waited: set[str] = field(default_factory=set)
    wait_notes: dict[str, list[str]] = field(default_factory=dict)
    # Actions whose wait failed after every write (only state commands were left).
    writes_made: set[str] = field(default_factory=set)
    # The ids of the endpoints this apply created, by ``Kind/name`` (pipes naming them).
    created_endpoints: dict[str, str] = field(default_factory=dict)

    def note(self, action: Action, message: str) -> None:
        """Add a line to what the action's result will say."""
        self.wait_notes.setdefault(action.key, []).append(message)


class _Written(StrEnum):
    """How a write that did not end its action was answered."""

    ANSWERED = "answered"
    ALREADY_GONE = "already gone"


class ActionSender:
    """Sends one action's requests in order, appending each request's result to ``done``."""

    def __init__(self, shared: ApplyShared, action: Action, done: list[RequestResult]) -> None:
        self.shared = shared
        self.action = action
        self.done = done
        self.label = f"{action.kind.lower()} {action.name}"
        # The index of the request being sent, the last answer, and the id a create made.
        self.index = 0
        self.last: Any = None
        self.created: str | None = None

    # Any: the last answer is whatever JSON the server sent; the caller only hands it on.
    async def send(self) -> tuple[Any, ActionResult | None]:
        """Return the last answer, or the action's result when a request failed, apply was
        interrupted or the interface was given up (the rest not sent)."""
        try:
            for index, request in enumerate(self.action.requests):
                self.index = index
                if self.created is not None and CREATED_ID in request.path:
                    path = request.path.replace(CREATED_ID, self.created)
                    request = dataclasses.replace(request, path=path)
                stopped = await self._one(request)
                if stopped is not None:
                    return self.last, stopped
        except InterfaceDown as exc:
            return None, cut_off(self.action, self.done, self.index, exc)
        return self.last, None

    async def _one(self, request: Request) -> ActionResult | None:
        """Send one request and what follows its answer (a record, a wait)."""
        action = self.action
        creates_pipe = action.kind == "Pipe" and request.purpose is Purpose.CREATE
        if creates_pipe:
            await self.shared.recorder.creating(action, request)
        if request.purpose.body_from_answer:
            return await self._deferred(request)
        if request.purpose.is_state_command and _planned_in_transition(action):
            # The plan saw the pipe on its way to another state: let it settle first.
            try:
                waited = await self._wait(request, None, settled_only=True)
            except Interrupted as exc:
                return cut_short(self.shared, action, self.done, self.index, exc.reason)
            if isinstance(waited, str):
                return self._halt(waited, self.index)
        written = await self._write(request, creates_pipe)
        if written is _Written.ALREADY_GONE:
            return None
        if isinstance(written, ActionResult):
            return written
        return await self._after_answer(request, creates_pipe)

    async def _deferred(self, request: Request) -> ActionResult | None:
        """Send the bodies computed from the previous answer (endpoint changes)."""
        answer = self.last if isinstance(self.last, Mapping) else {}
        for patch_body in deferred_endpoint_bodies(self.action, answer):
            try:
                self.last, record = await self.shared.recovery.send(
                    request, patch_body, self.label, idempotent=False, method="PATCH"
                )
            except AuthenticationFailed:  # the run stops: never one resource's error
                raise
            except ApiError as exc:
                self.done.append(failed(request, exc, Outcome.FAILED))
                action = self.action
                return ActionResult(
                    action.key, action.operation, Outcome.FAILED, (str(exc),), tuple(self.done)
                )
            self.done.append(ok(request, record))
        return None

    async def _write(self, request: Request, creates_pipe: bool) -> ActionResult | _Written:
        """Send the request; a refusal or a lost answer is resolved by re-reading."""
        action, recovery, index = self.action, self.shared.recovery, self.index
        try:
            body = recovery.with_secrets(action, request)
            self.last, record = await recovery.send(request, body, self.label, request.idempotent)
            self.done.append(ok(request, record))
        except Interrupted as exc:  # this request was not started
            return cut_short(self.shared, action, self.done, index, exc.reason)
        except OutcomeUnknown as exc:
            resolved = await recovery.resolve_unknown(action, request, exc)
            if resolved is None:
                result = self._stop(Outcome.UNCERTAIN, exc)
                await self.shared.recorder.persist(urgent=True)
                return result
            self.last = resolved
            self.done.append(confirmed(request))
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except (BadRequest, Conflict, NotFound) as exc:
            if isinstance(exc, NotFound) and request.method == "DELETE":
                self.done.append(already_made(request, exc))  # already gone: what was wanted
                return _Written.ALREADY_GONE
            reread = await recovery.after_refusal(action, request, exc, self.label)
            if isinstance(reread, ApiError):
                lost = isinstance(reread, OutcomeUnknown)
                return self._stop(Outcome.UNCERTAIN if lost else Outcome.FAILED, reread)
            self.last = reread[0]
            self.done.append(reread[1])
        except ApiError as exc:
            if creates_pipe and exc.status is not None and exc.status >= 500:
                # The server failed while making it: it may exist. The mark ``creating``
                # left stays, so the next run adopts it as this tool's own if it shows
                # the body sent (never created twice, and ``--prune`` may retire it).
                await self.shared.recorder.persist(urgent=True)
                return self._stop(Outcome.UNCERTAIN, may_have_made(exc))
            return self._stop(Outcome.FAILED, exc)
        return _Written.ANSWERED

    async def _after_answer(self, request: Request, creates_pipe: bool) -> ActionResult | None:
        """Record what an answer made and wait for the state it leads to."""
        action, shared, last = self.action, self.shared, self.last
        if creates_pipe and isinstance(last, Mapping) and last.get("id"):
            self.created = str(last["id"])
            await shared.recorder.created(action, last)
        if creates_endpoint(action, request) and isinstance(last, Mapping) and last.get("id"):
            await shared.recorder.endpoint_created(action, last)
            waited, note = await wait_ready(shared.watcher, action, last)
            if isinstance(waited, str):
                return self._halt(waited, self.index + 1)
            shared.note(action, note)
            self.last = waited
            # Only a Ready endpoint is handed to the pipes that name it.
            shared.created_endpoints[action.key] = str(waited["id"])
        if not (request.purpose.is_state_command or (creates_pipe and self.created is not None)):
            return None
        # A later request (the edit after a stop, the stop after a create) needs the state:
        # waited for always; the last one unless --no-wait.
        if self.index + 1 < len(action.requests) or shared.wait.wait:
            try:
                answered = await self._wait(request, self.last)
            except Interrupted as exc:  # the request was answered: say so
                return cut_short(shared, action, self.done, self.index + 1, exc.reason)
            if isinstance(answered, str):
                return self._halt(answered, self.index + 1)
            self.last = answered
            return None
        shared.not_waited.add(action.key)
        state = self.last.get("state") if isinstance(self.last, Mapping) else None
        shared.note(
            action,
            f"{_what(request)}: sent, not waited for (--no-wait)"
            + (f"; the pipe is {state}" if state else ""),
        )
        return None

    def _halt(self, message: str, index: int) -> ActionResult:
        """A wait ended badly: the requests from ``index`` on are not sent. If they are only
        state commands, every write was made: state records it (the fingerprints sent)."""
        action = self.action
        if all(r.purpose.is_state_command for r in action.requests[index:]):
            self.shared.writes_made.add(action.key)
        self.done.extend(
            skipped(r, "not sent: the wait before it failed") for r in action.requests[index:]
        )
        return ActionResult(
            action.key, action.operation, Outcome.FAILED, (message,), tuple(self.done)
        )

    def _stop(self, outcome: Outcome, exc: ApiError) -> ActionResult:
        """The request being sent failed: the rest of the action is not sent."""
        action, index = self.action, self.index
        self.done.append(failed(action.requests[index], exc, outcome))
        self.done.extend(skipped(r) for r in action.requests[index + 1 :])
        return ActionResult(action.key, action.operation, outcome, (str(exc),), tuple(self.done))

    def _ids(self) -> PipeIds:
        """The pipe's ids: the one a create in this action just made, else the target's."""
        target = self.action.target
        return PipeIds(
            target["organizationId"], target["serviceId"], self.created or target["pipeId"]
        )

    async def _wait(
        self, request: Request, answer: Any, *, settled_only: bool = False
    ) -> Mapping[str, Any] | str:
        """Wait for the state a state command (or a create) leads to; return the pipe, or what
        went wrong (an interrupt while waiting is raised as ``Interrupted``)."""
        action, wait = self.action, self.shared.wait
        if settled_only:
            accept: frozenset[str] = SETTLED_STATES
        else:
            accept = _leads_to(request).reached_by
        watcher = self.shared.watcher
        result = await watcher.until(self._ids(), f"pipe {action.name}", accept, first=answer)
        what = "settle" if settled_only else _what(request)
        if result.status is WaitStatus.REACHED and result.live is not None:
            if not settled_only:
                self.shared.note(action, f"{what}: {result.state} after {result.seconds:.1f}s")
            return result.live
        if result.status is WaitStatus.FAILED:
            return f"pipe {action.name} is {result.state} after `{what}` (waited {result.seconds:.1f}s)"
        if result.status is WaitStatus.TIMED_OUT:
            return (
                f"pipe {action.name} is still {result.state} {result.seconds:.0f}s after `{what}` "
                f"(--wait-timeout {wait.timeout:g}s): the command was accepted; run plan "
                "again to see whether it got there"
            )
        return f"cannot read pipe {action.name} while waiting after `{what}`: {result.error}"


def cut_short(
    shared: ApplyShared, action: Action, done: list[RequestResult], index: int, reason: str
) -> ActionResult:
    """The result of an action the interrupt stopped before its request ``index`` (between
    requests, or in a wait): what was answered is reported, the rest as not sent."""
    if not any(r.outcome is Outcome.APPLIED for r in done):
        message = f"not started: apply was interrupted by {reason}"
        done.extend(skipped(r, message) for r in action.requests[index:])
        return ActionResult(action.key, action.operation, Outcome.SKIPPED, (message,), tuple(done))
    rest = action.requests[index:]
    if all(r.purpose.is_state_command for r in rest):
        shared.writes_made.add(action.key)  # state records what was sent
    done.extend(skipped(r, f"not sent: apply was interrupted by {reason}") for r in rest)
    if not rest:
        note = (
            f"{_what(action.requests[-1])}: answered; not waited for, apply was "
            f"interrupted by {reason}"
        )
        messages = (*renamed(action), *action.warnings, note)
        return ActionResult(action.key, action.operation, Outcome.APPLIED, messages, tuple(done))
    message = (
        f"interrupted after {index} of {len(action.requests)} requests ({reason}); run apply again"
    )
    return ActionResult(action.key, action.operation, Outcome.SKIPPED, (message,), tuple(done))


def renamed(action: Action) -> tuple[str, ...]:
    """Say what applying a rename did (the plan counted it: its result must say so too)."""
    if not action.renamed_from:
        return ()
    sent = "" if action.requests else " (nothing sent)"
    return (
        f"renamed from Dashboard/{action.renamed_from}: its state record moved to the new name{sent}",
    )


def _leads_to(request: Request) -> RunState:
    """Return the run state a state command (or a create: running) leads to."""
    return RunState.after(command_of(request) or StateCommand.START)


def _what(request: Request) -> str:
    """Name what a wait follows: the state command, or ``create``."""
    return str(command_of(request) or request.purpose)


def _planned_in_transition(action: Action) -> bool:
    """Tell whether the plan saw the pipe in a transitional state it had to leave."""
    return any(c.kind is ChangeKind.COMMAND and is_transitional(str(c.old)) for c in action.changes)
