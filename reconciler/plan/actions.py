"""The plan as data: Actions holding the exact requests apply will send.

A ``Plan`` is immutable data, in the spirit of a build plan: one ``Action`` per resource,
each with the manifest location that caused it, its field changes (for people), the exact
method, path and minimal JSON body of every request (for apply and for machines), the live
values it was computed from (so a saved plan can be checked for staleness), and its errors
and warnings. Renderers and ``apply`` walk the same actions. ``planners`` builds them;
``planfile`` serialises them to a versioned, redacted JSON document.

This module imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, overload

from reconciler.client.config import MANAGEMENT
from reconciler.model.errors import Location
from reconciler.model.identity import Bound
from reconciler.model.json import JsonLike
from reconciler.model.secrets import SecretTree
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, content_hash

__all__ = ["CREATED_ID", "Action", "Op", "Plan", "Purpose", "Request"]


PLAN_FORMAT_VERSION = 1


class Op(StrEnum):
    """Operations an action can carry out."""

    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"
    NOOP = "noop"
    ERROR = "error"


class Purpose(StrEnum):
    """Why a request is sent; shown in plans and results, and read by apply (never as text)."""

    UPDATE = "update"
    CREATE = "create"
    DELETE = "delete"
    REMOVE_TABLE_MAPPINGS = "remove table mappings"
    ADD_TABLE_MAPPINGS = "add table mappings"
    REMOVE_PRIVATE_ENDPOINTS = "remove private endpoints"
    ADD_PRIVATE_ENDPOINTS = "add private endpoints"
    READ_ORGANIZATION = "update name and read the organization"
    # The organization request whose bodies apply computes from the answer to the one before
    # it (a server that cannot read organizations, with nothing recorded in state).
    DEFERRED_ENDPOINTS = "private endpoints, computed at apply time from the answer above"
    # A replacement's first request: the old pipe goes, then a CREATE makes the new one.
    DELETE_FOR_REPLACE = "delete the pipe being replaced"
    # A pipe's run-state command (``{"command": "start" | "stop" | "resync"}``) and scaling.
    STATE_COMMAND = "state command"
    SCALING = "scaling"

    @property
    def body_from_answer(self) -> bool:
        """Tell whether apply builds this request's body from the previous answer."""
        return self is Purpose.DEFERRED_ENDPOINTS

    @property
    def is_state_command(self) -> bool:
        """Tell whether this request is a pipe state command (apply waits after it)."""
        return self is Purpose.STATE_COMMAND


# In a request path after a create, stands for the id the create's answer assigns: a pipe's
# state command or scaling request, planned with its create, goes to the pipe just made.
CREATED_ID = "{created-id}"


@dataclass(frozen=True)
class Request:
    """One request apply will send, exactly (``CREATED_ID`` in ``path``: see above)."""

    method: str
    path: str
    body: Mapping[str, SecretTree] | None
    interface: str = MANAGEMENT
    idempotent: bool = True
    purpose: Purpose = Purpose.UPDATE


class _Derived:
    """The "not given" default of ``Action.basis_hash``."""

    def __repr__(self) -> str:
        return "<hash of basis>"


DERIVED: Any = _Derived()


class _BasisHash:
    """``Action.basis_hash``: as given, else ``content_hash(basis)`` worked out on first read.

    Hashing a pipe's basis costs about as much as diffing it, and only a saved plan and apply
    read the hash: a text plan of 10,000 pipes never does. Given ``None`` stays ``None``;
    ``dataclasses.replace`` carries the value over as it carries every field, so a replace
    that sets ``basis`` sets ``basis_hash`` too.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    @overload
    def __get__(self, action: None, owner: type | None = None) -> Any: ...

    @overload
    def __get__(self, action: Action, owner: type | None = None) -> str | None: ...

    def __get__(self, action: Action | None, owner: type | None = None) -> Any:
        if action is None:
            return DERIVED  # the dataclass default
        value = action.__dict__[self.slot]
        if value is DERIVED:
            value = None if action.basis is None else content_hash(action.basis)
            action.__dict__[self.slot] = value
        return value

    def __set__(self, action: Action, value: str | None) -> None:
        action.__dict__[self.slot] = value


@dataclass(frozen=True)
class Action:
    """Everything the plan says about one resource."""

    kind: str
    name: str
    operation: Op
    location: Location
    changes: tuple[FieldChange, ...] = ()
    requests: tuple[Request, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    target: Mapping[str, str] = field(default_factory=dict)
    basis: JsonLike = None
    # Omitted: the content hash of ``basis``, worked out when first read (``_BasisHash``).
    basis_hash: _BasisHash = _BasisHash()
    secrets: Mapping[str, str] = field(default_factory=dict)
    # Secret fields whose fingerprints state records but the manifest no longer states: apply
    # forgets them (a state-only change), so stating the secret again sends it again.
    forget_secrets: tuple[str, ...] = ()
    content_hash: str | None = None
    # A dashboard whose ``metadata.name`` was renamed: the name its state record had.
    renamed_from: str | None = None
    # How the resource found its live object (``identity.Bound``: pinned, recorded, adopted,
    # new); apply records an adopted or created id in state. None: not a bound kind.
    bound: str | None = None
    # An adopted pipe proven to be the one a create of this tool made whose answer was lost
    # (``lifecycle.made_by_lost_create``): apply records it as created by this tool. Any other
    # adopted object is never the tool's own, whatever its record said before.
    made_by_us: bool = False

    @property
    def key(self) -> str:
        """Return ``Kind/name``."""
        return f"{self.kind}/{self.name}"

    @property
    def has_changes(self) -> bool:
        """Tell whether applying this action would write anything (a rename writes the state)."""
        if self.errors:
            return False
        return (bool(self.requests) and self.operation not in (Op.NOOP, Op.ERROR)) or bool(
            self.renamed_from
        )

    @property
    def renames_only(self) -> bool:
        """Tell whether this action is a pending rename and nothing else (apply sends nothing,
        only moves the dashboard's state record to its new ``metadata.name``)."""
        return bool(self.renamed_from) and not self.errors and self.operation is Op.NOOP


@dataclass(frozen=True, repr=False)
class Plan:
    """An immutable plan: actions in apply order plus how it was computed."""

    actions: tuple[Action, ...]
    requests_made: Mapping[str, int] = field(default_factory=dict)
    manifest_paths: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # Whether the server could list dashboards when the plan was computed (None: not asked).
    dashboards_listable: bool | None = None
    # The project environment the plan was made for (``--env``); None outside environments.
    environment: str | None = None

    def __repr__(self) -> str:
        # Counts, not every action: a plan of 10,000 pipes rendered field by field is megabytes.
        counts = ", ".join(f"{k}={v}" for k, v in self.summary().items() if v)
        return f"Plan({len(self.actions)} actions: {counts or 'none'})"

    @property
    def changed(self) -> tuple[Action, ...]:
        """Return the actions that write."""
        return tuple(a for a in self.actions if a.has_changes)

    @property
    def failed(self) -> tuple[Action, ...]:
        """Return the actions that cannot be planned."""
        return tuple(a for a in self.actions if a.errors)

    def summary(self) -> dict[str, int]:
        """Count actions by outcome, each in one bucket (a pending rename is a change)."""
        counts = {
            "create": 0,
            "update": 0,
            "replace": 0,
            "delete": 0,
            "rename": 0,
            "unchanged": 0,
            "warnings": 0,
            "errors": 0,
        }
        for action in self.actions:
            if action.errors:
                counts["errors"] += 1
            elif action.operation in (Op.CREATE, Op.UPDATE, Op.REPLACE, Op.DELETE):
                counts[action.operation] += 1
            elif action.renames_only:
                counts["rename"] += 1
            else:
                counts["unchanged"] += 1
                if action.warnings:
                    counts["warnings"] += 1
        return counts


def error_action(
    kind: str, name: str, location: Location, message: str, target: Mapping[str, str] | None = None
) -> Action:
    """Return an action that only reports ``message`` as an error."""
    return Action(kind, name, Op.ERROR, location, errors=(message,), target=dict(target or {}))


def noop_action(
    kind: str,
    name: str,
    location: Location,
    target: Mapping[str, str],
    basis: JsonLike,
    *,
    bound: str | None = None,
    warnings: tuple[str, ...] = (),
) -> Action:
    """Return the action of a resource already as stated, planned from the live ``basis``
    (its hash is worked out when read): the base the other operations are made from."""
    return Action(
        kind, name, Op.NOOP, location, target=target, basis=basis, bound=bound, warnings=warnings
    )


def replacing(
    created: Action,
    reasons: Sequence[FieldChange],
    delete: Request,
    warning: str,
    *,
    basis: JsonLike,
    bound: str | None,
    target: Mapping[str, str] | None = None,
) -> Action:
    """Make ``created`` (the manifest's object planned as new) replace the live one: ``delete``
    is sent first, and ``reasons`` and ``warning`` come before what creating it says."""
    return replace(
        created,
        operation=Op.REPLACE,
        changes=(*reasons, *created.changes),
        requests=(delete, *created.requests),
        warnings=(warning, *created.warnings),
        target=created.target if target is None else target,
        basis=basis,
        basis_hash=DERIVED,
        bound=bound,
    )


def prune_action(
    kind: str,
    name: str,
    location: Location,
    *,
    removed: tuple[str, str],
    delete: Request,
    warning: str,
    target: Mapping[str, str],
    basis: JsonLike,
) -> Action:
    """Return the deletion of an object this tool created (its state record binds it) whose
    manifest is gone; ``removed`` is the field the change names and how the object is shown."""
    field_name, shown = removed
    return Action(
        kind,
        name,
        Op.DELETE,
        location,
        changes=(FieldChange((field_name,), shown, MISSING, ChangeKind.REMOVE, location),),
        requests=(delete,),
        warnings=(warning,),
        target=target,
        basis=basis,
        bound=Bound.RECORDED,
    )
