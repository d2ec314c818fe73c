"""Applying a plan: send each action's requests, verify convergence, record state.

``apply`` walks the same actions the renderers show. Every action ends with one result —
applied, unchanged, failed (with the API error), skipped (an earlier request of the same
action failed), stale (a saved plan whose live basis moved) or uncertain (a create whose
answer was lost and cannot be checked). After each write the response is checked against the
desired values; a mismatch is "not converged". State is saved after every action, so a run
killed halfway loses nothing it applied, and running apply again finishes the job.

Writes are resent only when that is harmless: a merge-style PATCH of absolute values may be
repeated; a table-mapping or private-endpoint add/remove, or a dashboard create, whose answer
was lost is resolved by re-reading the live object, never by a blind resend.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.api import DASHBOARDS, Client, OutcomeUnknown, RequestRecord
from reconciler.diff import (
    MISSING,
    ChangeKind,
    FieldChange,
    content_hash,
    format_mapping_key,
    leaf_differences,
    mapping_key,
    project,
    same,
)
from reconciler.errors import ApiError, PlanError
from reconciler.live import PipeIds, read_dashboards
from reconciler.plan import DEFERRED_ENDPOINTS, Action, Op, Plan, Request
from reconciler.resources import JsonPath
from reconciler.state import State


class Outcome:
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
    purpose: str
    status: int | None
    request_id: str | None
    outcome: str
    error: str | None = None


@dataclass(frozen=True)
class ActionResult:
    """What happened to one action."""

    key: str
    operation: str
    outcome: str
    messages: tuple[str, ...] = ()
    requests: tuple[RequestResult, ...] = ()

    @property
    def failed(self) -> bool:
        """Tell whether this action leaves work undone."""
        return self.outcome in FAILURES


@dataclass
class ApplyReport:
    """Every action's result, in plan order."""

    results: list[ActionResult] = field(default_factory=list)

    @property
    def failed(self) -> list[ActionResult]:
        """Return the results that leave work undone."""
        return [r for r in self.results if r.failed]

    def counts(self) -> dict[str, int]:
        """Count results by outcome."""
        out: dict[str, int] = {}
        for result in self.results:
            out[result.outcome] = out.get(result.outcome, 0) + 1
        return out


def _value_at(obj: Any, path: JsonPath) -> Any:
    node = obj
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return MISSING
    return node


def unconverged(action: Action, live: Mapping[str, Any]) -> list[str]:
    """List the planned changes that ``live`` (the object after the writes) does not show."""
    problems: list[str] = []
    if action.kind == "Pipe":
        mappings = _value_at(live, ("source", "postgres", "tableMappings"))
        present = {mapping_key(m): m for m in mappings} if isinstance(mappings, list) else {}
        added = {
            format_mapping_key(mapping_key(c.new))
            for c in action.changes
            if c.kind is ChangeKind.ADD
        }
        for change in action.changes:
            if change.kind is ChangeKind.SET:
                have = _value_at(live, change.path)
                if not same(change.new, have):
                    problems.append(
                        f"{change.dotted} is {have!r} after the write, expected {change.new!r}"
                    )
            elif change.kind is ChangeKind.ADD:
                key = mapping_key(change.new)
                if key not in present or not same(change.new, present[key]):
                    problems.append(
                        f"table mapping {format_mapping_key(key)} is missing after the write"
                    )
            elif (
                change.kind is ChangeKind.REMOVE
                and str(change.path[-1]) not in added
                and mapping_key(change.old) in present
            ):
                problems.append(
                    f"table mapping {format_mapping_key(mapping_key(change.old))} is still present"
                )
    elif action.kind == "Organization":
        endpoints = {
            str(e.get("id")): e
            for e in live.get("privateEndpoints") or []
            if isinstance(e, Mapping)
        }
        added = {str(c.path[-1]) for c in action.changes if c.kind is ChangeKind.ADD}
        for change in action.changes:
            ident = str(change.path[-1])
            if change.kind is ChangeKind.SET and not same(
                change.new, live.get(str(change.path[0]), MISSING)
            ):
                problems.append(
                    f"{change.dotted} is {live.get(str(change.path[0]))!r} after the write"
                )
            elif change.kind is ChangeKind.ADD and (
                ident not in endpoints or not same(change.new, endpoints[ident])
            ):
                problems.append(f"private endpoint {ident} is missing after the write")
            elif change.kind is ChangeKind.REMOVE and ident not in added and ident in endpoints:
                problems.append(f"private endpoint {ident} is still present after the write")
    elif action.kind == "Dashboard" and action.operation != Op.DELETE:
        for change in action.changes:
            if change.kind is ChangeKind.SET and not same(
                change.new, live.get(str(change.path[0]), MISSING)
            ):
                problems.append(f"{change.dotted} differs after the write")
    return problems


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
        self._dashboards_listable: bool | None = None
        self._dirty = False
        self._writer: asyncio.Task[None] | None = None

    async def apply(self, plan: Plan, *, stale: Mapping[str, str] | None = None) -> ApplyReport:
        """Apply every action of ``plan``; ``stale`` maps resource keys to a staleness message."""
        stale = stale or {}

        async def one(action: Action) -> ActionResult:
            try:
                if action.key in stale:
                    return ActionResult(
                        action.key, action.operation, Outcome.STALE, (stale[action.key],)
                    )
                return await self._apply_action(action)
            finally:
                self.progress(1)

        try:
            results = await asyncio.gather(*(one(a) for a in plan.actions))
        finally:
            await self.flush()
        return ApplyReport(list(results))

    async def _apply_action(self, action: Action) -> ActionResult:
        if action.errors:
            return ActionResult(action.key, action.operation, Outcome.FAILED, action.errors)
        if not action.has_changes:
            await self._record_unchanged(action)
            return ActionResult(action.key, action.operation, Outcome.UNCHANGED, action.warnings)
        done: list[RequestResult] = []
        last: Any = None
        for index, request in enumerate(action.requests):
            if request.purpose == DEFERRED_ENDPOINTS:
                bodies = deferred_endpoint_bodies(action, last if isinstance(last, Mapping) else {})
                for patch_body in bodies:
                    try:
                        last, record = await self.client.call(
                            request.interface,
                            "PATCH",
                            request.path,
                            patch_body,
                            resource=f"{action.kind.lower()} {action.name}",
                            idempotent=False,
                        )
                        done.append(_ok(request, record))
                    except ApiError as exc:
                        done.append(_failed(request, exc, Outcome.FAILED))
                        return ActionResult(
                            action.key, action.operation, Outcome.FAILED, (str(exc),), tuple(done)
                        )
                continue
            body = self._with_secrets(action, request)
            try:
                last, record = await self.client.call(
                    request.interface,
                    request.method,
                    request.path,
                    body,
                    resource=f"{action.kind.lower()} {action.name}",
                    idempotent=request.idempotent,
                )
                done.append(_ok(request, record))
            except OutcomeUnknown as exc:
                resolved = await self._resolve_unknown(action, request, exc)
                if resolved is None:
                    done.append(_failed(request, exc, Outcome.UNCERTAIN))
                    done.extend(_skipped(r) for r in action.requests[index + 1 :])
                    await self._persist(urgent=True)
                    return ActionResult(
                        action.key, action.operation, Outcome.UNCERTAIN, (str(exc),), tuple(done)
                    )
                last = resolved
                done.append(
                    RequestResult(
                        request.method,
                        request.path,
                        request.purpose,
                        None,
                        None,
                        Outcome.APPLIED,
                        "answer lost; confirmed by re-reading",
                    )
                )
            except ApiError as exc:
                done.append(_failed(request, exc, Outcome.FAILED))
                done.extend(_skipped(r) for r in action.requests[index + 1 :])
                return ActionResult(
                    action.key, action.operation, Outcome.FAILED, (str(exc),), tuple(done)
                )
        await self._record_applied(action, last)
        problems = unconverged(action, last) if isinstance(last, Mapping) else []
        if problems:
            return ActionResult(
                action.key, action.operation, Outcome.NOT_CONVERGED, tuple(problems), tuple(done)
            )
        return ActionResult(
            action.key, action.operation, Outcome.APPLIED, action.warnings, tuple(done)
        )

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
                listed = await read_dashboards(self.client)
                if listed is None:
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
        if _write_visible(action, request, live):
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
            {".".join(map(str, p)) for p in _leaf_paths(action.basis)}
            | {c.dotted for c in action.changes if c.kind in (ChangeKind.SET, ChangeKind.SENSITIVE)}
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
            if action.operation == Op.DELETE:
                self.state.forget(action.key)
            elif isinstance(live, Mapping):
                created = action.operation in (Op.CREATE, Op.REPLACE)
                previous = self.state.dashboard(action.name)
                self.state.record(
                    action.key,
                    id=str(live.get("id")),
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

    async def _record_unchanged(self, action: Action) -> None:
        if (
            action.kind == "Dashboard"
            and action.target.get("id")
            and self.state.dashboard(action.name) is None
        ):
            # Adopted by name: remember the id so renames on the server do not lose it.
            self.state.record(
                action.key,
                id=action.target["id"],
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


def _leaf_paths(value: Any, path: JsonPath = ()) -> list[JsonPath]:
    if isinstance(value, Mapping) and value:
        return [leaf for k, v in value.items() for leaf in _leaf_paths(v, (*path, k))]
    return [path] if path else []


def deferred_endpoint_bodies(action: Action, live: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Compute private endpoint add/remove bodies from the organization just read."""
    wanted = [dict(c.new) for c in action.changes if c.kind is ChangeKind.ADD]
    current = [e for e in live.get("privateEndpoints") or [] if isinstance(e, Mapping)]
    by_id = {str(e.get("id")): e for e in current}
    want_ids = {str(e.get("id")) for e in wanted}
    adds = [e for e in wanted if str(e.get("id")) not in by_id]
    changed = [
        e for e in wanted if str(e.get("id")) in by_id and not same(e, by_id[str(e.get("id"))])
    ]
    removes = [dict(e) for i, e in by_id.items() if i not in want_ids]
    removes += [dict(by_id[str(e.get("id"))]) for e in changed]
    bodies: list[dict[str, Any]] = []
    if removes:
        bodies.append({"privateEndpoints": {"remove": removes}})
    if adds or changed:
        bodies.append({"privateEndpoints": {"add": adds + changed}})
    return bodies


def _write_visible(action: Action, request: Request, live: Mapping[str, Any]) -> bool:
    body = request.body or {}
    if action.kind == "Pipe":
        postgres = (body.get("source") or {}).get("postgres") or {}
        mappings = _value_at(live, ("source", "postgres", "tableMappings"))
        present = {mapping_key(m) for m in mappings} if isinstance(mappings, list) else set()
        adds = [mapping_key(m) for m in postgres.get("tableMappingsToAdd") or []]
        removes = [mapping_key(m) for m in postgres.get("tableMappingsToRemove") or []]
        if adds:
            return all(k in present for k in adds)
        return bool(removes) and all(k not in present for k in removes)
    if action.kind == "Organization":
        endpoints = {
            str(e.get("id")) for e in live.get("privateEndpoints") or [] if isinstance(e, Mapping)
        }
        change = body.get("privateEndpoints") or {}
        added = [str(e.get("id")) for e in change.get("add") or []]
        removed = [str(e.get("id")) for e in change.get("remove") or []]
        if added:
            return all(i in endpoints for i in added)
        return bool(removed) and all(i not in endpoints for i in removed)
    return False


def _ok(request: Request, record: RequestRecord) -> RequestResult:
    return RequestResult(
        request.method,
        request.path,
        request.purpose,
        record.status,
        record.request_id,
        Outcome.APPLIED,
    )


def _failed(request: Request, exc: ApiError, outcome: str) -> RequestResult:
    return RequestResult(
        request.method,
        request.path,
        request.purpose,
        exc.status,
        exc.request_id,
        outcome,
        exc.message,
    )


def _skipped(request: Request) -> RequestResult:
    return RequestResult(
        request.method,
        request.path,
        request.purpose,
        None,
        None,
        Outcome.SKIPPED,
        "an earlier request of this resource failed",
    )


# -- saved plans ----------------------------------------------------------------------------------


async def find_stale(client: Client, plan: Plan) -> dict[str, str]:
    """Re-read each changing action's live object; return messages for those that moved."""
    stale: dict[str, str] = {}
    dashboards: list[dict[str, Any]] | None = None
    if any(a.kind == "Dashboard" and a.has_changes and a.basis is not None for a in plan.actions):
        dashboards = await read_dashboards(client)

    async def check(action: Action) -> None:
        if not action.has_changes or action.basis is None:
            return
        label = f"{action.kind.lower()} {action.name}"
        try:
            if action.kind == "Pipe":
                t = action.target
                live: Any = await client.get(
                    PipeIds(t["organizationId"], t["serviceId"], t["pipeId"]).path, resource=label
                )
            elif action.kind == "Organization":
                try:
                    live = await client.get(
                        f"/v1/organizations/{action.target['organizationId']}", resource=label
                    )
                except ApiError as exc:
                    if exc.status in (404, 405):
                        return
                    raise
            else:
                live = next(
                    (d for d in dashboards or [] if str(d.get("id")) == action.target.get("id")),
                    None,
                )
                if live is None:
                    stale[action.key] = (
                        f"stale plan for {label}: the dashboard no longer exists; run plan again"
                    )
                    return
        except ApiError as exc:
            stale[action.key] = f"cannot re-read {label} to check the plan: {exc}"
            return
        now = project(live, action.basis)
        if content_hash(now) == action.basis_hash:
            return
        moved = leaf_differences(action.basis, now)
        detail = "; ".join(
            f"{'.'.join(str(p) for p in path)} changed from {_plain(before)} to {_plain(after)}"
            for path, before, after in moved[:5]
        )
        stale[action.key] = (
            f"stale plan for {label}: {detail or 'live object changed'} since planning; run plan again"
        )

    await asyncio.gather(*(check(a) for a in plan.actions))
    return stale


def _plain(value: Any) -> str:
    return "absent" if value is MISSING else repr(value) if isinstance(value, str) else str(value)


def secrets_for_saved_plan(
    plan: Plan, resolved: Mapping[str, Mapping[str, Any]], fingerprint_of: Callable[[Any], str]
) -> dict[str, dict[JsonPath, Any]]:
    """Match each saved sensitive change with the secret resolved now; refuse a changed secret."""
    out: dict[str, dict[JsonPath, Any]] = {}
    for action in plan.actions:
        for change in action.changes:
            if change.kind is not ChangeKind.SENSITIVE or not action.has_changes:
                continue
            spec = resolved.get(action.key)
            if spec is None:
                raise PlanError(
                    f"{action.key}: the plan changes a secret but the manifest is no longer among {list(plan.manifest_paths)}"
                )
            value = _value_at(spec, change.path)
            dotted = ".".join(str(p) for p in change.path)
            expected = action.secrets.get(dotted)
            if value is MISSING or expected is None or fingerprint_of(value) != expected:
                raise PlanError(
                    f"{action.key}: the secret at {dotted} differs from the one the plan was made with; run plan again"
                )
            out.setdefault(action.key, {})[change.path] = value
    return out


def changed_paths(changes: Sequence[FieldChange]) -> list[str]:
    """Return the dotted paths of changes (for summaries)."""
    return [c.dotted for c in changes]


__all__ = [
    "DASHBOARDS",
    "Applier",
    "ApplyReport",
    "Outcome",
    "find_stale",
    "secrets_for_saved_plan",
    "unconverged",
]
