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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import httpx

from reconciler.client.api import ApiConfig, Client
from reconciler.load.manifests import find_manifest_files, load_resources
from reconciler.load.overlays import Layering, load_environment
from reconciler.model import collector
from reconciler.model.errors import ReconcileError, StateError
from reconciler.model.resources import KINDS
from reconciler.plan.actions import Plan
from reconciler.plan.compute import (
    PlanOptions,
    new_state_creates,
    new_state_message,
    plan_resources,
)
from reconciler.plan.planfile import dumps
from reconciler.state.backend import (
    DEFAULT_WORKSPACE,
    Backend,
    create_state,
    read_state,
)
from reconciler.state.document import State
from reconciler.state.stores import open_backend


@dataclass(frozen=True)
class Scope:
    """What a run reconciles: manifest paths, where the state lives, the default organization."""

    paths: tuple[str, ...]
    state: str  # a file path, postgresql://… or s3://… (``--state``)
    workspace: str = DEFAULT_WORKSPACE
    organization: str | None = None
    # An environment's overlays and excludes (``reconciler.load.overlays``); None: the base.
    layering: Layering | None = None
    environment: str | None = None  # the environment's name, for messages and reports
    # The manifest paths the project file names (None: the run's paths are the whole project).
    project_paths: tuple[str, ...] | None = None
    # Where ``state`` came from, for its errors: ``--state``, ``RECONCILE_STATE``, a project key.
    state_origin: str | None = None

    def backend(self) -> Backend:
        """Open the state backend (the caller closes it)."""
        return open_backend(self.state, self.workspace, self.state_origin)

    def complete_kinds(self) -> frozenset[str] | None:
        """Return the kinds of which ``paths`` hold every manifest the project has.

        None when they hold all of them (or no project file names its manifests): then a
        rename of ``metadata.name`` may be inferred and prune may delete pipes. The project's
        manifests the run leaves out are read only to learn their kinds; if they cannot be
        read, no kind counts as complete.
        """
        if self.project_paths is None:
            return None
        try:
            project = {Path(f).resolve() for f in find_manifest_files(self.project_paths)}
            mine = {Path(f).resolve() for f in find_manifest_files(self.paths)}
            left_out = sorted(project - mine)
            if not left_out:
                return None
            kinds = {
                r.kind for r in load_resources(left_out, default_organization=self.organization)
            }
        except ReconcileError:
            return frozenset()
        return frozenset(KINDS) - kinds


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
) -> PlanResult:
    """Plan ``scope`` against the server ``config`` names: the whole of ``reconcile plan``."""
    with collector.spared() as loaded:
        resources = load_environment(
            scope.paths, organization=scope.organization, layering=scope.layering
        )
        loaded()
        with contextlib.closing(scope.backend()) as backend:
            state = read_state(backend)
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
