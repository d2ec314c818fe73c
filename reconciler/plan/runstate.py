"""A pipe's run state and scaling: what the plan asks of the state and scaling endpoints.

Where the server offers the pipe lifecycle endpoints (the real service does; ``--spec-only``
does not), ``spec.state: Running | Stopped`` is a desired state reached with the state command
(``PATCH …/state {"command": "start" | "stop"}``) after any update, and ``spec.scaling`` is
written with one ``PATCH …/scaling`` of the changed fields. A database pipe reports ``Paused``
when stopped: that satisfies ``Stopped``. Transitional states (Provisioning, Stopping, …) head
for a settled one: a pipe on its way to the desired state is *converging*, never drift.

Edits the service takes only while a pipe is paused (postgres table mappings) are planned as
stop → edit → start when the manifest wants the pipe running (or says nothing), and stop → edit
when it wants it stopped. Without the lifecycle endpoints all of this stays as it was: state
and scaling are expectations, and a paused-only edit on a running pipe is an error that says
to pause the pipe.

This module imports neither httpx nor click.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reconciler.client.paths import PipeIds, pipes_path
from reconciler.model.errors import Location
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree
from reconciler.plan.actions import CREATED_ID, Action, Purpose, Request
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange

__all__ = [
    "FAILED_STATES",
    "SETTLED_STATES",
    "RunState",
    "StateCommand",
    "command_of",
    "is_transitional",
    "settled",
]


class PipeState(StrEnum):
    """The states the service reports for a pipe."""

    UNKNOWN = "Unknown"
    PROVISIONING = "Provisioning"
    RUNNING = "Running"
    DEGRADED = "Degraded"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    FAILED = "Failed"
    COMPLETED = "Completed"
    INTERNAL_ERROR = "InternalError"
    SETUP = "Setup"
    SNAPSHOT = "Snapshot"
    PAUSED = "Paused"
    PAUSING = "Pausing"
    MODIFYING = "Modifying"
    RESYNC = "Resync"


class StateCommand(StrEnum):
    """The commands of a pipe's state endpoint."""

    START = "start"
    STOP = "stop"
    RESYNC = "resync"


def command_of(request: Request) -> StateCommand | None:
    """Return the state command a request sends (None: not a state command)."""
    if not request.purpose.is_state_command or not isinstance(request.body, Mapping):
        return None
    try:
        return StateCommand(str(request.body.get("command")))
    except ValueError:
        return None


class RunState(StrEnum):
    """The run states a manifest can ask for (every other ``spec.state`` is an expectation)."""

    RUNNING = "Running"
    STOPPED = "Stopped"

    @property
    def command(self) -> StateCommand:
        """Return the state command that reaches this run state."""
        return StateCommand.START if self is RunState.RUNNING else StateCommand.STOP

    @property
    def reached_by(self) -> frozenset[str]:
        """Return the live states that satisfy this run state."""
        return REACHED[self]

    @classmethod
    def after(cls, command: StateCommand) -> RunState:
        """Return the run state a state command leads to (resync: back to running)."""
        return cls.STOPPED if command is StateCommand.STOP else cls.RUNNING


REACHED: dict[RunState, frozenset[str]] = {
    RunState.RUNNING: frozenset({PipeState.RUNNING}),
    # A stopped database pipe reports Paused.
    RunState.STOPPED: frozenset({PipeState.STOPPED, PipeState.PAUSED}),
}
# Each transitional state and the settled state it heads for.
HEADING: dict[str, str] = {
    PipeState.PROVISIONING: PipeState.RUNNING,
    PipeState.SETUP: PipeState.RUNNING,
    PipeState.SNAPSHOT: PipeState.RUNNING,
    PipeState.MODIFYING: PipeState.RUNNING,
    PipeState.RESYNC: PipeState.RUNNING,
    PipeState.STOPPING: PipeState.STOPPED,
    PipeState.PAUSING: PipeState.PAUSED,
}
# Every state a pipe stays in until something happens.
SETTLED_STATES: frozenset[str] = frozenset(s for s in PipeState if s not in HEADING)
# States a wait ends in with an error for that pipe.
FAILED_STATES: frozenset[str] = frozenset({PipeState.FAILED, PipeState.INTERNAL_ERROR})
STATE_PATH = ("state",)
SCALING = "scaling"


def desired_run_state(spec: Mapping[str, SecretTree]) -> RunState | None:
    """Return the run state a pipe spec asks for, or None (absent, or an expectation)."""
    value = spec.get("state")
    wanted = isinstance(value, str) and value in (RunState.RUNNING, RunState.STOPPED)
    return RunState(value) if wanted and isinstance(value, str) else None


def settled(state: str) -> str:
    """Return the settled state a live state is (or heads for)."""
    return HEADING.get(state, state)


def converging_to(desired: RunState, state: str) -> bool:
    """Tell whether a pipe in ``state`` has reached ``desired`` or is on its way there."""
    return settled(state) in desired.reached_by


def is_transitional(state: str) -> bool:
    """Tell whether ``state`` is on its way to another (Provisioning, Stopping, …)."""
    return state in HEADING


def needs_pause(change: FieldChange) -> bool:
    """Tell whether the service takes this change only while the pipe is paused."""
    return change.kind in (ChangeKind.ADD, ChangeKind.REMOVE)


@dataclass(frozen=True)
class LifecyclePlan:
    """What a pipe's run state and scaling add to its plan."""

    changes: tuple[FieldChange, ...]
    # Requests sent before the update (a stop, so a paused-only edit is taken) and after it.
    before: tuple[Request, ...] = ()
    after: tuple[Request, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # Live values the plan relied on beyond the managed fields (the run state): the basis.
    basis: Mapping[str, JsonLike] = field(default_factory=dict)


def plan_lifecycle(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    live: JsonMapping,
    changes: Sequence[FieldChange],
    ids: PipeIds | None,
    *,
    offered: bool,
) -> LifecyclePlan:
    """Turn a pipe's state and scaling changes into state and scaling requests.

    ``changes`` are the diff's; ``offered`` tells whether the server has the lifecycle
    endpoints. The changes returned replace them.
    """
    state = str(live.get("state", "")) or PipeState.UNKNOWN
    paused_edits = [c for c in changes if needs_pause(c)]
    if not offered or ids is None:
        kept = tuple(_as_expectation(c) for c in changes)
        blocked = paused_edits and state != PipeState.PAUSED
        errors = (_pause_error(resource, state, paused_edits),) if blocked else ()
        return LifecyclePlan(kept, errors=errors)
    desired = desired_run_state(spec)
    kept_changes: list[FieldChange] = []
    scaling: dict[str, Any] = {}
    for change in changes:
        if change.path == STATE_PATH and desired is not None:
            continue  # planned below
        if change.path[:1] == (SCALING,) and len(change.path) == 2:
            if change.kind is ChangeKind.EXPECTATION:
                change = FieldChange(
                    change.path, change.old, change.new, ChangeKind.SET, change.location
                )
            scaling[str(change.path[1])] = None if change.kind is ChangeKind.RESET else change.new
        kept_changes.append(change)
    after: list[Request] = []
    if scaling:
        after.append(
            Request("PATCH", ids.scaling_path, scaling, idempotent=True, purpose=Purpose.SCALING)
        )
    return _run_state(resource, desired, state, ids, kept_changes, after, paused_edits)


def _run_state(
    resource: Resource,
    desired: RunState | None,
    state: str,
    ids: PipeIds,
    changes: list[FieldChange],
    after: list[Request],
    paused_edits: Sequence[FieldChange],
) -> LifecyclePlan:
    """Plan the state commands: the desired run state, and a pause around paused-only edits."""
    where = resource.locate_spec("state") if desired is not None else None
    basis: dict[str, Any] = {"state": state} if desired is not None else {}
    before: list[Request] = []
    errors: list[str] = []
    warnings: list[str] = []
    if desired is not None and where is not None:
        if state == PipeState.COMPLETED:
            errors.append(
                f"the pipe is Completed: it cannot be started or stopped, and the manifest "
                f"({where}) wants it {desired}"
            )
        elif state in desired.reached_by:
            pass
        elif desired is RunState.RUNNING and state == PipeState.DEGRADED:
            # Running, with errors: a start would not fix that (and would restart it).
            warnings.append(
                "the pipe is Degraded: it runs, with errors the state command cannot fix; "
                "see its errors on the service"
            )
        elif converging_to(desired, state):
            changes.append(FieldChange(STATE_PATH, state, desired, ChangeKind.CONVERGING, where))
        else:
            changes.append(FieldChange(STATE_PATH, state, desired, ChangeKind.COMMAND, where))
            after.append(_command(ids, desired))
    if paused_edits and state != PipeState.PAUSED:
        if state not in (PipeState.RUNNING, PipeState.DEGRADED):
            errors.append(_pause_error(resource, state, paused_edits, lifecycle=True))
        else:
            # Stop first, wait for Paused, edit; start again unless the pipe is to stay stopped.
            basis["state"] = state
            before.append(_command(ids, RunState.STOPPED))
            after[:] = [r for r in after if not r.purpose.is_state_command]
            if desired is not RunState.STOPPED:
                after.append(_command(ids, RunState.RUNNING))
                warnings.append(
                    "the service edits table mappings only while a pipe is paused: the pipe is "
                    "stopped, edited, then started again (ingestion pauses meanwhile)"
                )
    return LifecyclePlan(
        tuple(changes),
        tuple(before),
        tuple(after),
        tuple(errors),
        tuple(warnings),
        basis,
    )


def _command(ids: PipeIds, desired: RunState) -> Request:
    return Request(
        "PATCH",
        ids.state_path,
        {"command": str(desired.command)},
        idempotent=True,
        purpose=Purpose.STATE_COMMAND,
    )


def _as_expectation(change: FieldChange) -> FieldChange:
    """Without the lifecycle endpoints, a scaling reset (``null``) cannot be sent either."""
    if change.path[:1] == (SCALING,) and change.kind is ChangeKind.RESET:
        return FieldChange(
            change.path, change.old, change.new, ChangeKind.EXPECTATION, change.location
        )
    return change


def _pause_error(
    resource: Resource, state: str, edits: Sequence[FieldChange], *, lifecycle: bool = False
) -> str:
    where: Location = edits[0].location if edits else resource.locate("metadata", "name")
    if lifecycle:
        return (
            f"table mappings ({where}) can only be edited while the pipe is Paused, and it is "
            f"{state}: {'wait until it settles, then apply again' if is_transitional(state) else 'start or stop it first'}"
        )
    return (
        f"table mappings ({where}) can only be edited while the pipe is Paused (it is "
        f"{state}): this server has no state command, so pause the pipe, apply, then resume it"
    )


def after_create(resource: Resource, spec: Mapping[str, SecretTree], action: Action) -> Action:
    """Stop a pipe just created when its manifest wants it stopped (a pipe is created running).

    The command goes to the created pipe (``CREATED_ID``) once it is Running: apply waits
    for that after the create.
    """
    creates = any(r.purpose is Purpose.CREATE for r in action.requests)
    if desired_run_state(spec) is not RunState.STOPPED or action.errors or not creates:
        return action
    target = action.target
    # The placeholder is not an id: it is not made a path segment (apply puts the id there).
    path = f"{pipes_path(target['organizationId'], target['serviceId'])}/{CREATED_ID}/state"
    stop = Request(
        "PATCH",
        path,
        {"command": str(StateCommand.STOP)},
        idempotent=True,
        purpose=Purpose.STATE_COMMAND,
    )
    where = resource.locate_spec("state")
    change = FieldChange(STATE_PATH, MISSING, str(RunState.STOPPED), ChangeKind.COMMAND, where)
    return dataclasses.replace(
        action, requests=(*action.requests, stop), changes=(*action.changes, change)
    )
