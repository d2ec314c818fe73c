"""Planning every environment in one run (``plan --all-envs``), and reporting it.

``compute_plans`` plans each ``Target`` (an environment's client configuration and scope:
its own API, key, state, workspace and request budget) with ``compute_plan``. Environments
that use different keys run concurrently; environments on the same key (and server) run one
after another, since they share that key's rate limit on the server. An environment whose
settings or plan fail is reported as failed without stopping the others.

The reports: ``render_text`` (a section per environment), ``render_markdown`` (one
pull-request comment: a summary table on top, then a section per environment) and
``to_json`` (one document holding each environment's plan document). ``exit_code`` is 1 if
any environment failed, else 2 with ``detailed`` when any has changes, else 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field

import httpx

from reconciler.client.api import ApiConfig
from reconciler.model.errors import ReconcileError, error_entries
from reconciler.model.json import JsonLike
from reconciler.model.secrets import variables
from reconciler.plan import render
from reconciler.plan.actions import PLAN_FORMAT_VERSION, Plan
from reconciler.plan.compute import PlanOptions
from reconciler.plan.planfile import plan_to_json
from reconciler.plan.run import (
    PlanResult,
    ProgressBar,
    ProgressFactory,
    Scope,
    compute_plan,
    no_progress,
)

__all__ = [
    "Target",
    "combined",
    "compute_plans",
    "exit_code",
    "render_markdown",
    "render_text",
    "to_json",
]


@dataclass(frozen=True)
class Target:
    """One environment to plan: its name and what its settings built (or why they failed)."""

    name: str
    config: ApiConfig | None = None
    scope: Scope | None = None
    error: ReconcileError | None = None
    # The variables its manifests' ``fromEnv`` references read (its env files included);
    # None: the process environment.
    environ: Mapping[str, str] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class EnvironmentPlan:
    """One environment's outcome: its plan, or the error that stopped it."""

    target: Target
    result: PlanResult | None = None
    error: ReconcileError | None = None

    @property
    def name(self) -> str:
        """Return the environment's name."""
        return self.target.name

    @property
    def failed(self) -> bool:
        """Tell whether the environment could not be planned or has actions in error."""
        return self.error is not None or (self.result is not None and bool(self.result.plan.failed))

    @property
    def changed(self) -> bool:
        """Tell whether the environment's plan has changes."""
        return self.result is not None and bool(self.result.plan.changed)


async def compute_plans(
    targets: Sequence[Target],
    options: PlanOptions | None = None,
    *,
    progress: ProgressFactory = no_progress,
    transports: Mapping[str, httpx.AsyncBaseTransport] | None = None,
) -> list[EnvironmentPlan]:
    """Plan every target; those on different keys concurrently. Results in target order."""
    outcomes: dict[str, EnvironmentPlan] = {}
    lanes: dict[tuple[str, str], list[Target]] = {}
    for target in targets:
        if target.error is not None or target.config is None or target.scope is None:
            outcomes[target.name] = EnvironmentPlan(target, error=target.error)
            continue
        lane = (target.config.base_url, target.config.key_id)
        lanes.setdefault(lane, []).append(target)

    async def one(target: Target) -> EnvironmentPlan:
        assert target.config is not None and target.scope is not None
        transport = (transports or {}).get(target.name)
        try:
            scoped = variables(target.environ) if target.environ is not None else nullcontext()
            with scoped:  # this task only: the others keep their own
                result = await compute_plan(
                    target.config,
                    target.scope,
                    options,
                    progress=_named(progress, target.name),
                    transport=transport,
                )
        except ReconcileError as exc:
            return EnvironmentPlan(target, error=exc)
        return EnvironmentPlan(target, result)

    async def lane_of(queue: list[Target]) -> None:
        for target in queue:
            outcomes[target.name] = await one(target)

    # Each lane is a task of its own, so the variables one environment sets stay in it.
    await asyncio.gather(*(asyncio.create_task(lane_of(queue)) for queue in lanes.values()))
    return [outcomes[t.name] for t in targets]


def _named(progress: ProgressFactory, name: str) -> ProgressFactory:
    """Return ``progress`` with each bar's description prefixed by the environment's name."""

    def factory(description: str, total: int | None = None, unit: str = "req") -> ProgressBar:
        return progress(f"{name}: {description}", total, unit)

    return factory


def combined(plans: Sequence[EnvironmentPlan]) -> Plan:
    """Return one plan holding every environment's actions (for the run's metrics)."""
    actions = tuple(a for p in plans if p.result is not None for a in p.result.plan.actions)
    made: dict[str, int] = {}
    for p in plans:
        for interface, count in (p.result.plan.requests_made if p.result else {}).items():
            made[interface] = made.get(interface, 0) + count
    return Plan(actions, requests_made=made)


def exit_code(plans: Sequence[EnvironmentPlan], detailed: bool) -> int:
    """Return 1 if any environment failed, else 2 (with ``detailed``) if any changes, else 0."""
    if any(p.failed for p in plans):
        return 1
    return 2 if detailed and any(p.changed for p in plans) else 0


def _where(plan: EnvironmentPlan) -> str:
    """Return ``workspace staging, organization …`` for a section heading."""
    scope = plan.target.scope
    if scope is None:
        return ""
    parts = [f"workspace {scope.workspace}"]
    if scope.organization:
        parts.append(f"organization {scope.organization}")
    config = plan.target.config
    if config is not None and config.base_url:
        parts.append(config.base_url)
    return ", ".join(parts)


def _outcome(plan: EnvironmentPlan) -> str:
    if plan.error is not None:
        return "failed"
    if plan.failed:
        return "errors"
    return "changes" if plan.changed else "no changes"


def render_text(plans: Sequence[EnvironmentPlan], *, color: bool = False) -> str:
    """Return a section per environment, then one line per environment."""
    out: list[str] = []
    for plan in plans:
        where = _where(plan)
        out.append(f"=== Environment {plan.name}" + (f" ({where})" if where else "") + " ===")
        if plan.error is not None:
            out.append(f"Error: {plan.error}")
            out.append("")
        elif plan.result is not None:
            out.append(render.render_text(plan.result.plan, color=color).rstrip("\n"))
            out.append("")
    out.append("Environments: " + "; ".join(f"{p.name}: {_outcome(p)}" for p in plans) + ".")
    return "\n".join(out) + "\n"


def render_markdown(plans: Sequence[EnvironmentPlan], *, limit: int = render.MARKDOWN_LIMIT) -> str:
    """Return one pull-request comment: a summary table on top, a section per environment."""
    head = [
        f"### reconcile plan: {len(plans)} environments",
        "",
        "| Environment | Result | Create | Update | Replace | Delete | Unchanged | Errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for plan in plans:
        if plan.result is None:
            head.append(f"| `{plan.name}` | ❌ failed | | | | | | 1 |")
            continue
        s = plan.result.plan.summary()
        mark = "❌ " if plan.failed else ""
        head.append(
            f"| `{plan.name}` | {mark}{_outcome(plan)} | {s['create']} | {s['update']} | "
            f"{s['replace']} | {s['delete']} | {s['unchanged']} | {s['errors']} |"
        )
    sections: list[str] = []
    share = max(2000, (limit - 2000) // max(1, len(plans)))
    for plan in plans:
        where = _where(plan)
        lines = [f"#### Environment `{plan.name}`" + (f" ({where})" if where else ""), ""]
        if plan.error is not None:
            body = render.render_errors_markdown(error_entries(plan.error), 1)
        else:
            assert plan.result is not None
            body = render.render_markdown(plan.result.plan, limit=share)
        body = body.removeprefix("### reconcile plan\n").lstrip("\n")
        sections.append("\n".join(lines) + "\n" + body)
    return "\n".join(head) + "\n\n" + "\n".join(sections)


def to_json(plans: Sequence[EnvironmentPlan], exit_code: int) -> dict[str, JsonLike]:
    """Return one document holding each environment's plan document and the exit code."""
    environments: list[dict[str, JsonLike]] = []
    for plan in plans:
        code = 1 if plan.failed else (2 if exit_code == 2 and plan.changed else 0)
        if plan.result is not None:
            document = plan_to_json(plan.result.plan, exit_code=code)
        else:
            errors = error_entries(plan.error) if plan.error is not None else []
            document = plan_to_json(Plan(actions=()), errors=errors, exit_code=1)
        scope = plan.target.scope
        environments.append(
            {
                "name": plan.name,
                "workspace": scope.workspace if scope else None,
                "organizationId": scope.organization if scope else None,
                "result": _outcome(plan),
                "plan": document,
            }
        )
    return {
        "formatVersion": PLAN_FORMAT_VERSION,
        "exitCode": exit_code,
        "environments": environments,
    }
