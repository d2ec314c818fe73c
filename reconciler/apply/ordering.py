"""The order apply follows across kinds, and its wait for a new endpoint to be Ready.

Actions run concurrently within a phase, phases one after another: reverse private endpoints
are made (and Ready) before the pipes that name them; CDC scaling follows the pipes (it exists
once its service has a database pipe, which the same apply may create); endpoints are deleted
last, after the pipes that used them are gone or moved.
"""

from __future__ import annotations

from reconciler.apply.waiting import PipeWatcher, Subject, WaitStatus
from reconciler.client.paths import PipeIds
from reconciler.model.cdc import CDC
from reconciler.model.endpoints import ENDPOINT, READY
from reconciler.model.json import JsonMapping
from reconciler.plan.actions import Action, Op, Purpose, Request

__all__: list[str] = []


def phases(actions: tuple[Action, ...]) -> list[list[Action]]:
    """Split actions into apply order: endpoints made, the rest, CDC scaling, endpoints
    deleted (each phase in plan order; empty phases left out)."""
    first = [a for a in actions if a.kind == ENDPOINT and a.operation is not Op.DELETE]
    last = [a for a in actions if a.kind == ENDPOINT and a.operation is Op.DELETE]
    cdc = [a for a in actions if a.kind == CDC]
    middle = [a for a in actions if a.kind not in (ENDPOINT, CDC)]
    return [phase for phase in (first, middle, cdc, last) if phase]


def creates_endpoint(action: Action, request: Request) -> bool:
    """Tell whether ``request`` is the POST that creates an endpoint."""
    return action.kind == ENDPOINT and request.purpose is Purpose.CREATE


async def wait_ready(
    watcher: PipeWatcher, action: Action, created: JsonMapping
) -> tuple[JsonMapping | str, str]:
    """Wait for a new endpoint to be Ready; return it (or what went wrong) and a note."""
    target = action.target
    ids = PipeIds(target["organizationId"], target["serviceId"], str(created["id"]))
    label = f"reverse private endpoint {action.name}"
    result = await watcher.until(ids, label, {READY}, first=created, subject=Subject.ENDPOINT)
    note = f"create: {result.state} after {result.seconds:.1f}s"
    if result.status is WaitStatus.REACHED and result.live is not None:
        return result.live, note
    if result.status is WaitStatus.FAILED:
        return f"{label} is {result.state} after `create` (waited {result.seconds:.1f}s)", note
    if result.status is WaitStatus.TIMED_OUT:
        return (
            f"{label} is still {result.state} {result.seconds:.0f}s after `create` "
            f"(--wait-timeout {watcher.options.timeout:g}s): it was created and recorded; run "
            "plan again to see whether it got there"
        ), note
    return f"cannot read {label} while waiting after `create`: {result.error}", note
