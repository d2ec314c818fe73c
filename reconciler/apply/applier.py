"""Applying a plan: send each action's requests, verify convergence, record state.

``apply`` walks the same actions the renderers show. Every action ends with one result
(``results``: applied, unchanged, failed, skipped, stale, not converged, uncertain). After each
write the response is checked against the
desired values; a mismatch is "not converged". State is recorded and saved as actions end
(``recorder``: a dashboard's record at once, others paced), so a run killed halfway loses no
dashboard it created and at most a moment of fingerprints, and running apply again finishes
the job.

When an interface stops answering (``InterfaceDown``: the run's retry budget spent, or
connections refused after it had answered), nothing more is sent to it: each action it cut
off ends once, ``skipped`` with its requests "not sent" (or "not applied" when the server
turned them away) or ``uncertain`` when a request may have reached the server, and the
actions on the other interface carry on.

Writes are resent only when that is harmless (``recovery``): a lost answer or a refused edit is
resolved by re-reading the live object, never by a blind resend.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.apply.ordering import creates_endpoint, phases, wait_ready
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
from reconciler.apply.verify import (
    deferred_endpoint_bodies,
    unconverged,
)
from reconciler.apply.waiting import PipeWatcher, Waiting, WaitOptions, WaitStatus
from reconciler.client.api import Client, OutcomeUnknown
from reconciler.client.paths import PipeIds
from reconciler.model.errors import (
    ApiError,
    AuthenticationFailed,
    BadRequest,
    Conflict,
    InterfaceDown,
    Interrupted,
    NotFound,
)
from reconciler.model.resources import JsonPath
from reconciler.plan.actions import CREATED_ID, Action, Op, Plan, Purpose, Request
from reconciler.plan.diff import ChangeKind
from reconciler.plan.endpointrefs import fill_created
from reconciler.plan.runstate import (
    SETTLED_STATES,
    RunState,
    StateCommand,
    command_of,
    is_transitional,
)
from reconciler.state.document import State


class Applier:
    """Carries out a plan's actions through a client, recording state as it goes."""

    def __init__(
        self,
        client: Client,
        state: State,
        *,
        secrets: Mapping[str, Mapping[JsonPath, Any]] | None = None,
        progress: Callable[[int], None] | None = None,
        wait: WaitOptions | None = None,
        waiting: Callable[[tuple[Waiting, ...]], None] | None = None,
    ) -> None:
        self.client = client
        self.wait = wait or WaitOptions()
        self.watcher = PipeWatcher(client, self.wait, waiting or (lambda pending: None))
        # Actions whose last state command was sent but not waited for (--no-wait).
        self._not_waited: set[str] = set()
        self._wait_notes: dict[str, list[str]] = {}
        # Actions whose wait failed after every write (only state commands were left).
        self._writes_made: set[str] = set()
        self.state = state
        self.recorder = StateRecorder(state)
        self.recovery = Recovery(client, state, secrets or {})
        self.progress = progress or (lambda n: None)
        self._tasks: dict[asyncio.Task[ActionResult], Action] = {}
        self._aborted_in_flight: set[asyncio.Task[ActionResult]] = set()
        # Each action's request results so far: an interrupt reports what was answered.
        self._done: dict[str, list[RequestResult]] = {}
        # The ids of the endpoints this apply created, by ``Kind/name`` (pipes naming them).
        self._created_endpoints: dict[str, str] = {}

    # -- interruption (SIGINT/SIGTERM) ---------------------------------------------------------

    def stop(self, reason: str) -> int:
        """Start no new request; return how many are on the wire (they may finish)."""
        self.client.halt(reason)
        return len(self.client.sending)

    def abort(self) -> None:
        """Cancel every unfinished action now; one with a request on the wire is uncertain."""
        self._aborted_in_flight = {t for t in self._tasks if t in self.client.sending}
        for task in self._tasks:
            task.cancel()

    def _interrupted(self, action: Action) -> ActionResult:
        """The result of an action cancelled by ``abort``."""
        reason = self.client.halted or "an interrupt"
        if asyncio.current_task() not in self._aborted_in_flight:
            done = self._done.get(action.key, [])
            return self._cut_short(action, done, len(done), reason)
        if action.kind == "Dashboard" and action.operation in (Op.CREATE, Op.REPLACE):
            # The create may have happened: never create it blindly again (see plan_dashboard).
            self.state.record(action.key, uncertain=True, contentHash=action.content_hash)
        return ActionResult(
            action.key,
            action.operation,
            Outcome.UNCERTAIN,
            (
                f"aborted while in flight (second {reason}): it may or may not have taken "
                "effect; run apply again, which reads the live state first",
            ),
        )

    def _cut_short(
        self, action: Action, done: list[RequestResult], index: int, reason: str
    ) -> ActionResult:
        """The result of an action the interrupt stopped before its request ``index`` (between
        requests, or in a wait): what was answered is reported, the rest as not sent."""
        if not any(r.outcome is Outcome.APPLIED for r in done):
            message = f"not started: apply was interrupted by {reason}"
            done.extend(skipped(r, message) for r in action.requests[index:])
            return ActionResult(
                action.key, action.operation, Outcome.SKIPPED, (message,), tuple(done)
            )
        rest = action.requests[index:]
        if all(r.purpose.is_state_command for r in rest):
            self._writes_made.add(action.key)  # state records what was sent
        done.extend(skipped(r, f"not sent: apply was interrupted by {reason}") for r in rest)
        if not rest:
            note = (
                f"{_what(action.requests[-1])}: answered; not waited for, apply was "
                f"interrupted by {reason}"
            )
            messages = (*_renamed(action), *action.warnings, note)
            return ActionResult(
                action.key, action.operation, Outcome.APPLIED, messages, tuple(done)
            )
        message = (
            f"interrupted after {index} of {len(action.requests)} requests ({reason}); "
            "run apply again"
        )
        return ActionResult(action.key, action.operation, Outcome.SKIPPED, (message,), tuple(done))

    async def apply(
        self,
        plan: Plan,
        *,
        stale: Mapping[str, str] | None = None,
        applied: Mapping[str, str] | None = None,
    ) -> tuple[ActionResult, ...]:
        """Apply every action of ``plan``; ``stale`` maps resource keys to a staleness message,
        ``applied`` those a saved plan already applied (reported unchanged, never resent)."""
        stale = stale or {}
        applied = applied or {}

        async def one(action: Action) -> ActionResult:
            try:
                if self.client.halted is not None and action.has_changes:
                    return ActionResult(
                        action.key,
                        action.operation,
                        Outcome.SKIPPED,
                        (f"not started: apply was interrupted by {self.client.halted}",),
                    )
                if action.key in stale:
                    return ActionResult(
                        action.key, action.operation, Outcome.STALE, (stale[action.key],)
                    )
                if action.key in applied:
                    return ActionResult(
                        action.key, action.operation, Outcome.UNCHANGED, (applied[action.key],)
                    )
                return await self._apply_action(action)
            except Interrupted as exc:
                return ActionResult(action.key, action.operation, Outcome.SKIPPED, (str(exc),))
            except asyncio.CancelledError:
                if self.client.halted is None:
                    raise  # not our abort: let the cancellation through
                return self._interrupted(action)
            finally:
                self.progress(1)

        results: dict[str, ActionResult] = {}
        try:
            # Endpoints are made (and Ready) before the pipes that use them, and deleted after
            # the pipes that used them are gone or moved; within a phase all run at once.
            for phase in phases(plan.actions):
                self._tasks = {asyncio.create_task(one(a)): a for a in phase}
                for action, result in zip(phase, await asyncio.gather(*self._tasks), strict=True):
                    results[action.key] = result
        finally:
            await self.watcher.close()
            await self.flush()
        return tuple(results[a.key] for a in plan.actions)

    async def _apply_action(self, action: Action) -> ActionResult:
        if action.errors:
            return ActionResult(action.key, action.operation, Outcome.FAILED, action.errors)
        if action.kind == "Pipe":
            filled = fill_created(action, self._created_endpoints)
            if isinstance(filled, str):
                unsent = tuple(skipped(r, filled) for r in action.requests)
                return ActionResult(
                    action.key, action.operation, Outcome.SKIPPED, (filled,), unsent
                )
            action = filled
        if not action.has_changes:
            await self.recorder.unchanged(action)
            return ActionResult(action.key, action.operation, Outcome.UNCHANGED, action.warnings)
        done: list[RequestResult] = self._done.setdefault(action.key, [])
        last, stopped = await self._send(action, done)
        if stopped is not None:
            if action.key in self._writes_made:
                await self.recorder.applied(action, last)
            if stopped.outcome is Outcome.FAILED and action.operation is Op.CREATE:
                await self.recorder.not_created(action)
            return stopped
        await self.recorder.applied(action, last)
        waited = action.key not in self._not_waited
        problems = unconverged(action, last, waited=waited) if isinstance(last, Mapping) else []
        if problems:
            return ActionResult(
                action.key, action.operation, Outcome.NOT_CONVERGED, tuple(problems), tuple(done)
            )
        messages = (*_renamed(action), *action.warnings, *self._wait_notes.pop(action.key, ()))
        return ActionResult(action.key, action.operation, Outcome.APPLIED, messages, tuple(done))

    async def _send(
        self, action: Action, done: list[RequestResult]
    ) -> tuple[Any, ActionResult | None]:
        """Send the requests in order, appending to ``done``; return the last answer, or the
        action's result when a request failed, apply was interrupted or the interface was
        given up (the rest not sent)."""
        last: Any = None
        label = f"{action.kind.lower()} {action.name}"

        def halt(message: str, index: int) -> ActionResult:
            # A wait ended badly: the requests from ``index`` on are not sent. If they are only
            # state commands, every write was made: state records it (the fingerprints sent).
            if all(r.purpose.is_state_command for r in action.requests[index:]):
                self._writes_made.add(action.key)
            done.extend(
                skipped(r, "not sent: the wait before it failed") for r in action.requests[index:]
            )
            return ActionResult(
                action.key, action.operation, Outcome.FAILED, (message,), tuple(done)
            )

        def stop(outcome: Outcome, exc: ApiError, index: int) -> ActionResult:
            done.append(failed(action.requests[index], exc, outcome))
            done.extend(skipped(r) for r in action.requests[index + 1 :])
            return ActionResult(action.key, action.operation, outcome, (str(exc),), tuple(done))

        created: str | None = None

        def ids() -> PipeIds:
            # The pipe's ids: the one a create in this action just made, else the target's.
            target = action.target
            return PipeIds(
                target["organizationId"], target["serviceId"], created or target["pipeId"]
            )

        index = 0  # the request being sent when the interface is given up
        try:
            for index, request in enumerate(action.requests):
                if created is not None and CREATED_ID in request.path:
                    request = dataclasses.replace(
                        request, path=request.path.replace(CREATED_ID, created)
                    )
                creates_pipe = action.kind == "Pipe" and request.purpose is Purpose.CREATE
                if creates_pipe:
                    await self.recorder.creating(action, request)
                if request.purpose.body_from_answer:
                    answer = last if isinstance(last, Mapping) else {}
                    for patch_body in deferred_endpoint_bodies(action, answer):
                        try:
                            last, record = await self.recovery.send(
                                request, patch_body, label, idempotent=False, method="PATCH"
                            )
                        except AuthenticationFailed:  # the run stops: never one resource's error
                            raise
                        except ApiError as exc:
                            done.append(failed(request, exc, Outcome.FAILED))
                            return last, ActionResult(
                                action.key,
                                action.operation,
                                Outcome.FAILED,
                                (str(exc),),
                                tuple(done),
                            )
                        done.append(ok(request, record))
                    continue
                if request.purpose.is_state_command and _planned_in_transition(action):
                    # The plan saw the pipe on its way to another state: let it settle first.
                    try:
                        waited = await self._wait(action, request, None, ids(), settled_only=True)
                    except Interrupted as exc:
                        return last, self._cut_short(action, done, index, exc.reason)
                    if isinstance(waited, str):
                        return last, halt(waited, index)
                try:
                    last, record = await self.recovery.send(
                        request,
                        self.recovery.with_secrets(action, request),
                        label,
                        request.idempotent,
                    )
                    done.append(ok(request, record))
                except Interrupted as exc:  # this request was not started
                    return last, self._cut_short(action, done, index, exc.reason)
                except OutcomeUnknown as exc:
                    resolved = await self.recovery.resolve_unknown(action, request, exc)
                    if resolved is None:
                        result = stop(Outcome.UNCERTAIN, exc, index)
                        await self._persist(urgent=True)
                        return last, result
                    last = resolved
                    done.append(confirmed(request))
                except AuthenticationFailed:  # the run stops: never one resource's error
                    raise
                except (BadRequest, Conflict, NotFound) as exc:
                    if isinstance(exc, NotFound) and request.method == "DELETE":
                        done.append(already_made(request, exc))  # already gone: what was wanted
                        continue
                    reread = await self.recovery.after_refusal(action, request, exc, label)
                    if isinstance(reread, ApiError):
                        lost = isinstance(reread, OutcomeUnknown)
                        return last, stop(
                            Outcome.UNCERTAIN if lost else Outcome.FAILED, reread, index
                        )
                    last = reread[0]
                    done.append(reread[1])
                except ApiError as exc:
                    if creates_pipe and exc.status is not None and exc.status >= 500:
                        # The server failed while making it: it may exist. The mark ``creating``
                        # left stays, so the next run adopts it as this tool's own if it shows
                        # the body sent (never created twice, and ``--prune`` may retire it).
                        await self._persist(urgent=True)
                        return last, stop(Outcome.UNCERTAIN, may_have_made(exc), index)
                    return last, stop(Outcome.FAILED, exc, index)
                if creates_pipe and isinstance(last, Mapping) and last.get("id"):
                    created = str(last["id"])
                    await self.recorder.created(action, last)
                if (
                    creates_endpoint(action, request)
                    and isinstance(last, Mapping)
                    and last.get("id")
                ):
                    await self.recorder.endpoint_created(action, last)
                    waited, note = await wait_ready(self.watcher, action, last)
                    if isinstance(waited, str):
                        return last, halt(waited, index + 1)
                    self._note(action, note)
                    last = waited
                    # Only a Ready endpoint is handed to the pipes that name it.
                    self._created_endpoints[action.key] = str(last["id"])
                if request.purpose.is_state_command or (creates_pipe and created is not None):
                    # A later request (the edit after a stop, the stop after a create) needs the
                    # state: waited for always; the last one unless --no-wait.
                    if index + 1 < len(action.requests) or self.wait.wait:
                        try:
                            waited = await self._wait(action, request, last, ids())
                        except Interrupted as exc:  # the request was answered: say so
                            return last, self._cut_short(action, done, index + 1, exc.reason)
                        if isinstance(waited, str):
                            return last, halt(waited, index + 1)
                        last = waited
                    else:
                        self._not_waited.add(action.key)
                        state = last.get("state") if isinstance(last, Mapping) else None
                        self._note(
                            action,
                            f"{_what(request)}: sent, not waited for (--no-wait)"
                            + (f"; the pipe is {state}" if state else ""),
                        )
        except InterfaceDown as exc:
            return None, cut_off(action, done, index, exc)
        return last, None

    def _note(self, action: Action, message: str) -> None:
        self._wait_notes.setdefault(action.key, []).append(message)

    async def _wait(
        self,
        action: Action,
        request: Request,
        answer: Any,
        ids: PipeIds,
        *,
        settled_only: bool = False,
    ) -> Mapping[str, Any] | str:
        """Wait for the state a state command (or a create) leads to; return the pipe, or what
        went wrong (an interrupt while waiting is raised as ``Interrupted``)."""
        if settled_only:
            accept: frozenset[str] = SETTLED_STATES
        else:
            accept = _leads_to(request).reached_by
        result = await self.watcher.until(ids, f"pipe {action.name}", accept, first=answer)
        what = "settle" if settled_only else _what(request)
        if result.status is WaitStatus.REACHED and result.live is not None:
            if not settled_only:
                self._note(action, f"{what}: {result.state} after {result.seconds:.1f}s")
            return result.live
        if result.status is WaitStatus.FAILED:
            return f"pipe {action.name} is {result.state} after `{what}` (waited {result.seconds:.1f}s)"
        if result.status is WaitStatus.TIMED_OUT:
            return (
                f"pipe {action.name} is still {result.state} {result.seconds:.0f}s after `{what}` "
                f"(--wait-timeout {self.wait.timeout:g}s): the command was accepted; run plan "
                "again to see whether it got there"
            )
        return f"cannot read pipe {action.name} while waiting after `{what}`: {result.error}"

    # -- state ---------------------------------------------------------------------------------

    async def _persist(self, *, urgent: bool) -> None:
        """Save the state (see ``StateRecorder.persist``)."""
        await self.recorder.persist(urgent=urgent)

    async def flush(self) -> None:
        """Write every recorded change now and wait until it is stored."""
        await self.recorder.flush()


def _leads_to(request: Request) -> RunState:
    """Return the run state a state command (or a create: running) leads to."""
    return RunState.after(command_of(request) or StateCommand.START)


def _what(request: Request) -> str:
    """Name what a wait follows: the state command, or ``create``."""
    return str(command_of(request) or request.purpose)


def _planned_in_transition(action: Action) -> bool:
    """Tell whether the plan saw the pipe in a transitional state it had to leave."""
    return any(c.kind is ChangeKind.COMMAND and is_transitional(str(c.old)) for c in action.changes)


def _renamed(action: Action) -> tuple[str, ...]:
    """Say what applying a rename did (the plan counted it: its result must say so too)."""
    if not action.renamed_from:
        return ()
    sent = "" if action.requests else " (nothing sent)"
    return (
        f"renamed from Dashboard/{action.renamed_from}: its state record moved to the new name{sent}",
    )
