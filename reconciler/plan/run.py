"""``compute_plan``: the whole of ``reconcile plan`` as one call, and saving a plan for apply.

It loads the manifests, reads the state from its backend (without the lock: every write is
atomic, so a read is a consistent snapshot), checks the connection settings, opens the client
and runs the planning engine (``compute.plan_resources``). Progress is reported through a
factory the caller passes (the command line draws tqdm bars on a terminal); the default shows
nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import httpx

from reconciler.client.api import ApiConfig, Client
from reconciler.load.reading import Reading
from reconciler.model.errors import StateError
from reconciler.plan.actions import Plan
from reconciler.plan.compute import (
    PlanOptions,
    new_state_creates,
    new_state_message,
    plan_resources,
)
from reconciler.plan.planfile import dumps
from reconciler.plan.scope import DEPRECATED_READING
from reconciler.plan.scope import Scope as Scope  # re-exported: the Python API names it here
from reconciler.state.backend import (
    create_state,
    read_state,
)
from reconciler.state.document import State

__all__ = ["PlanResult", "ProgressFactory", "Scope", "compute_plan", "no_progress", "save_plan"]


@dataclass(frozen=True)
class PlanResult:
    """A computed plan and the state it was computed against (its key signs saved plans)."""

    plan: Plan
    state: State
    scope: Scope


class ProgressBar(Protocol):
    """Counts work done; ``close`` removes it."""

    def __call__(self, n: int = 1) -> None:
        """Count ``n`` more units."""

    def close(self) -> None:
        """Stop showing progress."""


class ProgressFactory(Protocol):
    """Makes a progress bar for one phase (``reading live state``, ``applying``)."""

    def __call__(
        self, description: str, total: int | None = None, unit: str = "req"
    ) -> ProgressBar:
        """Return a bar for ``description`` counting ``total`` ``unit``s (None: unknown)."""


class _NoProgress:
    def __call__(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


def no_progress(description: str, total: int | None = None, unit: str = "req") -> ProgressBar:
    """A progress factory that shows nothing (the default of the Python API)."""
    return _NoProgress()


async def compute_plan(
    config: ApiConfig,
    scope: Scope,
    options: PlanOptions | None = None,
    *,
    progress: ProgressFactory = no_progress,
    transport: httpx.AsyncBaseTransport | None = None,
    reading: Reading | None = None,
) -> PlanResult:
    """Plan ``scope`` against the server ``config`` names: the whole of ``reconcile plan``.

    ``reading`` is deprecated (``Scope.start_reading``): the manifests are read here.
    """
    if reading is not None:
        warnings.warn(DEPRECATED_READING, DeprecationWarning, stacklevel=2)
    resources = reading.result() if reading is not None else scope.load()
    with contextlib.closing(scope.backend()) as backend:
        state = read_state(backend)
    state.claim(scope.environment, scope.organization, scope.workspace)
    config.check()
    bar = progress("reading live state")
    try:
        async with Client(config, transport=transport) as client:
            plan = await plan_resources(
                client,
                resources,
                state,
                dataclasses.replace(
                    options or PlanOptions(), complete_kinds=scope.complete_kinds()
                ),
                manifest_paths=scope.paths,
                progress=bar,
            )
    finally:
        bar.close()
    if scope.environment:
        plan = replace(plan, environment=scope.environment)
    return PlanResult(plan, state, scope)


def save_plan(
    result: PlanResult, path: Path, *, new_state: bool = False, lock_timeout: float = 0.0
) -> None:
    """Write a plan for ``apply --plan``; a new state is created too, since its key signs it.

    A saved plan is a promise to apply, so the new-state guard refuses it now (unless
    ``new_state`` confirms a first run).
    """
    blind = () if new_state else new_state_creates(result.plan, result.state)
    if blind:
        raise StateError(new_state_message(blind, result.state, refusing=True))
    if not result.state.exists:
        with contextlib.closing(result.scope.backend()) as backend:
            create_state(backend, result.state, timeout=lock_timeout)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(result.plan), encoding="utf-8")
