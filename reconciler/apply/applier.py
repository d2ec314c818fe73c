"""Applying a plan: send each action's requests, verify convergence, record state.

``apply`` walks the same actions the renderers show. Every action ends with one result
(``results``: applied, unchanged, failed, skipped, stale, not converged, uncertain). After each
write the response is checked against the
desired values; a mismatch is "not converged". State is saved after every action, so a run
killed halfway loses nothing it applied, and running apply again finishes the job.

Writes are resent only when that is harmless: a merge-style PATCH of absolute values may be
repeated; a table-mapping or private-endpoint add/remove, or a dashboard create, whose answer
was lost is resolved by re-reading the live object, never by a blind resend.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from typing import Any

from reconciler.apply.results import (
    ActionResult,
    Outcome,
    RequestResult,
    confirmed,
    failed,
    ok,
    skipped,
)
from reconciler.apply.verify import deferred_endpoint_bodies, leaf_paths, unconverged, write_visible
from reconciler.client import reads
from reconciler.client.api import Client, OutcomeUnknown
from reconciler.model.errors import ApiError, Unsupported
from reconciler.model.resources import JsonPath
from reconciler.plan.actions import Action, Op, Plan, Request
from reconciler.plan.diff import ChangeKind
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
    ) -> None:
        self.client = client
        self.state = state
        self.secrets = secrets or {}
        self.progress = progress or (lambda n: None)
        self._dirty = False
        self._writer: asyncio.Task[None] | None = None

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
                if action.key in stale:
                    return ActionResult(
                        action.key, action.operation, Outcome.STALE, (stale[action.key],)
                    )
                if action.key in applied:
                    return ActionResult(
                        action.key, action.operation, Outcome.UNCHANGED, (applied[action.key],)
                    )
                return await self._apply_action(action)
            finally:
                self.progress(1)

        try:
            results = await asyncio.gather(*(one(a) for a in plan.actions))
        finally:
            await self.flush()
        return tuple(results)

    async def _apply_action(self, action: Action) -> ActionResult:
        if action.errors:
            return ActionResult(action.key, action.operation, Outcome.FAILED, action.errors)
        if not action.has_changes:
            await self._record_unchanged(action)
            return ActionResult(action.key, action.operation, Outcome.UNCHANGED, action.warnings)
        done: list[RequestResult] = []
        last, stopped = await self._send(action, done)
        if stopped is not None:
            return stopped
        await self._record_applied(action, last)
        problems = unconverged(action, last) if isinstance(last, Mapping) else []
        if problems:
            return ActionResult(
                action.key, action.operation, Outcome.NOT_CONVERGED, tuple(problems), tuple(done)
            )
        return ActionResult(
            action.key, action.operation, Outcome.APPLIED, action.warnings, tuple(done)
        )

    async def _send(
        self, action: Action, done: list[RequestResult]
    ) -> tuple[Any, ActionResult | None]:
        """Send the requests in order, appending to ``done``; return the last answer, or the
        action's result when a request failed (the ones after it are skipped)."""
        last: Any = None
        label = f"{action.kind.lower()} {action.name}"

        def stop(outcome: Outcome, exc: ApiError, index: int) -> ActionResult:
            done.append(failed(action.requests[index], exc, outcome))
            done.extend(skipped(r) for r in action.requests[index + 1 :])
            return ActionResult(action.key, action.operation, outcome, (str(exc),), tuple(done))

        for index, request in enumerate(action.requests):
            if request.purpose.body_from_answer:
                answer = last if isinstance(last, Mapping) else {}
                for patch_body in deferred_endpoint_bodies(action, answer):
                    try:
                        last, record = await self.client.call(
                            request.interface,
                            "PATCH",
                            request.path,
                            patch_body,
                            resource=label,
                            idempotent=False,
                        )
                    except ApiError as exc:
                        done.append(failed(request, exc, Outcome.FAILED))
                        return last, ActionResult(
                            action.key, action.operation, Outcome.FAILED, (str(exc),), tuple(done)
                        )
                    done.append(ok(request, record))
                continue
            try:
                last, record = await self.client.call(
                    request.interface,
                    request.method,
                    request.path,
                    self._with_secrets(action, request),
                    resource=label,
                    idempotent=request.idempotent,
                )
                done.append(ok(request, record))
            except OutcomeUnknown as exc:
                resolved = await self._resolve_unknown(action, request, exc)
                if resolved is None:
                    result = stop(Outcome.UNCERTAIN, exc, index)
                    await self._persist(urgent=True)
                    return last, result
                last = resolved
                done.append(confirmed(request))
            except ApiError as exc:
                return last, stop(Outcome.FAILED, exc, index)
        return last, None

    def _with_secrets(self, action: Action, request: Request) -> Mapping[str, Any] | None:
        if request.body is None:
            return None
        values = self.secrets.get(action.key)
        if not values:
            return request.body
        body: dict[str, Any] = copy.deepcopy(dict(request.body))
        for path, value in values.items():
            node: Any = body
            for part in path[:-1]:
                if not isinstance(node, dict) or part not in node:
                    node = None
                    break
                node = node[part]
            if isinstance(node, dict) and path[-1] in node:
                node[str(path[-1])] = value
        return body

    async def _resolve_unknown(self, action: Action, request: Request, exc: OutcomeUnknown) -> Any:
        """Re-read after a lost answer; return the live object if the write took effect."""
        try:
            if action.kind == "Dashboard" and request.method == "POST":
                try:
                    listed = await reads.list_dashboards(self.client)
                except Unsupported:
                    self.state.record(action.key, uncertain=True, contentHash=action.content_hash)
                    return None
                known = {r.id for r in self.state.dashboards().values()}
                for item in listed:
                    if (
                        item.get("name") == (request.body or {}).get("name")
                        and str(item.get("id")) not in known
                    ):
                        return item
                return None
            live = await self.client.get(
                request.path, resource=f"{action.kind.lower()} {action.name}"
            )
        except ApiError:
            return None
        if not isinstance(live, Mapping):
            return None
        if write_visible(action, request, live):
            return live
        # Not applied: the request never took effect, so sending it once more is safe.
        try:
            result, _ = await self.client.call(
                request.interface,
                request.method,
                request.path,
                self._with_secrets(action, request),
                idempotent=False,
            )
        except ApiError:
            return None
        return result

    # -- state ---------------------------------------------------------------------------------

    async def _record_applied(self, action: Action, live: Any) -> None:
        # Every field the manifest manages (not only the changed ones), secrets included.
        managed = sorted(
            {".".join(map(str, p)) for p in leaf_paths(action.basis)}
            | {
                c.dotted
                for c in action.changes
                if c.kind in (ChangeKind.SET, ChangeKind.SENSITIVE, ChangeKind.RESET)
            }
        )
        if action.kind == "Pipe":
            self.state.record(
                action.key,
                secrets=dict(action.secrets) or None,
                managed=managed or None,
                target=dict(action.target),
            )
        elif action.kind == "Organization" and isinstance(live, Mapping):
            observed = {k: live[k] for k in ("name", "privateEndpoints") if k in live}
            self.state.record(action.key, observed=observed, target=dict(action.target))
        elif action.kind == "Dashboard":
            self._move_renamed(action)
            if action.operation == Op.DELETE:
                self.state.forget(action.key)
            elif isinstance(live, Mapping):
                created = action.operation in (Op.CREATE, Op.REPLACE)
                previous = self.state.dashboard(action.name)
                self.state.record(
                    action.key,
                    id=str(live.get("id")),
                    displayName=live.get("name") or action.target.get("name"),
                    contentHash=action.content_hash,
                    createdByUs=created or bool(previous and previous.created_by_us),
                    uncertain=None,
                    replaced=[
                        *(self.state.resources.get(action.key, {}).get("replaced") or []),
                        previous.id,
                    ]
                    if action.operation == Op.REPLACE and previous and previous.id
                    else None,
                )
        await self._persist(urgent=action.kind == "Dashboard")

    def _move_renamed(self, action: Action) -> bool:
        """Move a renamed dashboard's record to its new ``metadata.name`` (same id, same owner)."""
        old_key = f"Dashboard/{action.renamed_from}"
        if action.renamed_from is None or old_key not in self.state.resources:
            return False
        entry = dict(self.state.resources[old_key])
        entry.pop("appliedAt", None)
        self.state.forget(old_key)
        self.state.record(action.key, **entry)
        return True

    async def _record_unchanged(self, action: Action) -> None:
        if action.kind == "Dashboard" and self._move_renamed(action):
            self.state.record(action.key, displayName=action.target.get("name"))
            await self._persist(urgent=True)
        elif (
            action.kind == "Dashboard"
            and action.target.get("id")
            and self.state.dashboard(action.name) is None
        ):
            # Adopted by name: remember the id so renames on the server do not lose it.
            self.state.record(
                action.key,
                id=action.target["id"],
                displayName=action.target.get("name"),
                contentHash=action.content_hash,
                createdByUs=False,
            )
            await self._persist(urgent=True)
        elif (
            action.kind == "Organization"
            and isinstance(action.basis, Mapping)
            and action.basis
            and self.state.organization_values(action.key) != dict(action.basis)
        ):
            self.state.record(action.key, observed=dict(action.basis), target=dict(action.target))
            await self._persist(urgent=False)

    async def _persist(self, *, urgent: bool) -> None:
        """Save the state off the event loop, coalescing saves that pile up meanwhile.

        A dashboard's record is urgent (awaited before the action reports done): losing it
        could mean creating the dashboard twice. A pipe's or organization's record only holds
        fingerprints and paths, which the next run recomputes, so other actions go on while
        it is written; ``apply`` waits for the last write before it returns.
        """
        self._dirty = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_loop())
        if urgent:
            await asyncio.shield(self._writer)

    async def _write_loop(self) -> None:
        while self._dirty:
            self._dirty = False
            data = self.state.serialize()  # a snapshot taken on the loop, between actions
            await asyncio.to_thread(self.state.write, data)

    async def flush(self) -> None:
        """Wait until every recorded change is on disk."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)
        if self._writer is not None:
            self._writer.result()
