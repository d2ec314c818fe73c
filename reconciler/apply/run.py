"""``apply_plan``: the whole of ``reconcile apply`` as one call, beside ``compute_plan``.

It holds the state lock for the whole run, then either computes a fresh plan or takes a
saved one (whose secrets are resolved again and matched with the plan's fingerprints, and
whose actions are checked for staleness against the live objects), shows the plan through a
hook, asks the caller to confirm, and applies. The caller decides how to show and confirm
(the command line prints and prompts; a Python caller may pass ``AUTO_APPROVE``); the result
says what happened, so the caller renders it and chooses the exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import httpx

from reconciler.apply.applier import ActionResult, Applier
from reconciler.apply.savedplan import find_stale, resolve_saved_secrets
from reconciler.client.api import ApiConfig, Client
from reconciler.load.manifests import load_manifests
from reconciler.model.resources import JsonPath, Resource
from reconciler.plan.actions import Plan
from reconciler.plan.compute import (
    PlanOptions,
    ProgressFactory,
    Workspace,
    no_progress,
    plan_resources,
)
from reconciler.state.local import State, locked_state


def AUTO_APPROVE(plan: Plan) -> bool:
    """Approve every plan without asking (``--auto-approve``)."""
    return True


def _show_nothing(plan: Plan) -> None:
    return None


class ApplyStatus(StrEnum):
    """How a run of apply ended before or after sending anything."""

    APPLIED = "applied"
    NOTHING_TO_APPLY = "nothing-to-apply"
    STALE = "stale"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class ApplyHooks:
    """How apply talks to its caller: showing the plan, confirming it, progress bars.

    ``show_plan`` is called once with the plan about to be applied (not when a saved plan is
    refused as stale); ``confirm`` only when the plan has changes, and nothing is sent unless
    it returns True.
    """

    confirm: Callable[[Plan], bool]
    show_plan: Callable[[Plan], None] = _show_nothing
    progress: ProgressFactory = no_progress


@dataclass(frozen=True)
class ApplyRequest:
    """What to apply: the manifests (or a saved plan) and how."""

    workspace: Workspace
    options: PlanOptions = field(default_factory=PlanOptions)
    saved_plan: Plan | None = None
    partial: bool = False
    lock_timeout: float = 0.0


@dataclass(frozen=True)
class ApplyResult:
    """What one apply did: the plan, each action's result, the stale actions refused."""

    status: ApplyStatus
    plan: Plan
    results: tuple[ActionResult, ...] = ()
    stale: Mapping[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """Tell whether anything is left undone (plan errors, failed or refused actions)."""
        if self.status in (ApplyStatus.STALE, ApplyStatus.CANCELLED):
            return True
        return bool(self.plan.failed) or any(r.failed for r in self.results)


async def apply_plan(
    config: ApiConfig,
    request: ApplyRequest,
    hooks: ApplyHooks,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ApplyResult:
    """Apply the workspace's manifests (or ``request.saved_plan``): the whole of ``reconcile apply``."""
    workspace = request.workspace
    saved = request.saved_plan
    paths = workspace.paths or (saved.manifest_paths if saved else ())
    resources = load_manifests(paths, organization=workspace.organization) if paths else []
    config.check()
    with locked_state(workspace.state_path, timeout=request.lock_timeout) as state:
        async with Client(config, transport=transport) as client:
            run = _Run(client, state, hooks)
            if saved is not None:
                return await run.saved(saved, resources, partial=request.partial)
            return await run.fresh(resources, request.options, paths)


@dataclass
class _Run:
    client: Client
    state: State
    hooks: ApplyHooks

    async def fresh(
        self, resources: list[Resource], options: PlanOptions, paths: tuple[str, ...]
    ) -> ApplyResult:
        bar = self.hooks.progress("reading live state")
        try:
            plan = await plan_resources(
                self.client, resources, self.state, options, manifest_paths=paths, progress=bar
            )
        finally:
            bar.close()
        return await self.carry_out(plan, secrets={}, stale={})

    async def saved(self, plan: Plan, resources: list[Resource], *, partial: bool) -> ApplyResult:
        secrets = resolve_saved_secrets(plan, resources, self.state.key)
        stale = await find_stale(self.client, plan)
        if stale and not partial:
            return ApplyResult(ApplyStatus.STALE, plan, stale=stale)
        return await self.carry_out(plan, secrets=secrets, stale=stale)

    async def carry_out(
        self,
        plan: Plan,
        *,
        secrets: Mapping[str, Mapping[JsonPath, Any]],
        stale: Mapping[str, str],
    ) -> ApplyResult:
        self.hooks.show_plan(plan)
        if not plan.changed:
            return ApplyResult(ApplyStatus.NOTHING_TO_APPLY, plan, stale=stale)
        if not self.hooks.confirm(plan):
            return ApplyResult(ApplyStatus.CANCELLED, plan, stale=stale)
        bar = self.hooks.progress("applying", len(plan.actions), "action")
        try:
            applier = Applier(self.client, self.state, secrets=secrets, progress=bar)
            report = await applier.apply(plan, stale=stale)
        finally:
            bar.close()
        return ApplyResult(ApplyStatus.APPLIED, plan, tuple(report.results), stale)
