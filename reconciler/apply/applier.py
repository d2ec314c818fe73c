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
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.apply.ordering import phases
from reconciler.apply.recorder import StateRecorder
from reconciler.apply.recovery import Recovery
from reconciler.apply.results import ActionResult, Outcome, RequestResult, skipped
from reconciler.apply.sending import ActionSender, ApplyShared, cut_short, renamed
from reconciler.apply.verify import unconverged
from reconciler.apply.waiting import PipeWatcher, Waiting, WaitOptions
from reconciler.client.api import Client
from reconciler.model.errors import Interrupted
from reconciler.model.resources import JsonPath
from reconciler.plan.actions import Action, Op, Plan
from reconciler.plan.endpointrefs import fill_created
from reconciler.state.document import State

__all__: list[str] = []


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
        self.state = state
        self.recorder = StateRecorder(state)
        self.recovery = Recovery(client, state, secrets or {})
        self.shared = ApplyShared(self.recorder, self.recovery, self.watcher, self.wait)
        self.progress = progress or (lambda n: None)
        self._tasks: dict[asyncio.Task[ActionResult], Action] = {}
        self._aborted_in_flight: set[asyncio.Task[ActionResult]] = set()
        # Each action's request results so far: an interrupt reports what was answered.
        self._done: dict[str, list[RequestResult]] = {}

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
            return cut_short(self.shared, action, done, len(done), reason)
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
            filled = fill_created(action, self.shared.created_endpoints)
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
            if action.key in self.shared.writes_made:
                await self.recorder.applied(action, last)
            if stopped.outcome is Outcome.FAILED and action.operation is Op.CREATE:
                await self.recorder.not_created(action)
            return stopped
        await self.recorder.applied(action, last)
        waited = action.key not in self.shared.not_waited
        problems = unconverged(action, last, waited=waited) if isinstance(last, Mapping) else []
        if problems:
            return ActionResult(
                action.key, action.operation, Outcome.NOT_CONVERGED, tuple(problems), tuple(done)
            )
        notes = self.shared.wait_notes.pop(action.key, ())
        messages = (*renamed(action), *action.warnings, *notes)
        return ActionResult(action.key, action.operation, Outcome.APPLIED, messages, tuple(done))

    async def _send(
        self, action: Action, done: list[RequestResult]
    ) -> tuple[Any, ActionResult | None]:
        """Send the requests in order, appending to ``done`` (``ActionSender``)."""
        return await ActionSender(self.shared, action, done).send()

    # -- state ---------------------------------------------------------------------------------

    async def _persist(self, *, urgent: bool) -> None:
        """Save the state (see ``StateRecorder.persist``)."""
        await self.recorder.persist(urgent=urgent)

    async def flush(self) -> None:
        """Write every recorded change now and wait until it is stored."""
        await self.recorder.flush()
