"""``apply_plan``: the whole of ``reconcile apply`` as one call, beside ``compute_plan``.

It holds the state backend's lock for the whole run, then either computes a fresh plan or takes a
saved one (whose secrets are resolved again and matched with the plan's fingerprints, and
whose actions are checked for staleness against the live objects), shows the plan through a
hook, asks the caller to confirm, and applies. The caller decides how to show and confirm
(the command line prints and prompts; a Python caller may pass ``AUTO_APPROVE``); the result
says what happened, so the caller renders it and chooses the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import httpx

from reconciler.apply.applier import Applier
from reconciler.apply.recorder import StateRecorder
from reconciler.apply.results import ActionResult
from reconciler.apply.savedplan import find_stale, resolve_saved_secrets
from reconciler.apply.waiting import Waiting, WaitOptions
from reconciler.client.api import ApiConfig, Client
from reconciler.load.reading import Reading
from reconciler.model.apierrors import InterfaceDown
from reconciler.model.errors import ConfigError, StateError
from reconciler.model.resources import JsonPath, Resource
from reconciler.plan.actions import Plan
from reconciler.plan.compute import (
    PlanOptions,
    new_state_creates,
    new_state_message,
    plan_resources,
    select_actions,
)
from reconciler.plan.run import ProgressFactory, no_progress
from reconciler.plan.scope import DEPRECATED_READING, Scope
from reconciler.state.backend import locked_state
from reconciler.state.document import State

__all__ = ["AUTO_APPROVE", "ApplyHooks", "ApplyRequest", "ApplyResult", "ApplyStatus", "apply_plan"]


def AUTO_APPROVE(plan: Plan) -> bool:
    """Approve every plan without asking (``--auto-approve``)."""
    return True


def _show_nothing(plan: Plan) -> None:
    return None


def _say_nothing(message: str) -> None:
    return None


def _nobody_waits(pending: tuple[Waiting, ...]) -> None:
    return None


def _do_nothing() -> None:
    return None


def count_outcomes(results: Iterable[ActionResult]) -> dict[str, int]:
    """Count action results by outcome."""
    out: dict[str, int] = {}
    for result in results:
        out[result.outcome] = out.get(result.outcome, 0) + 1
    return out


class ApplyStatus(StrEnum):
    """How a run of apply ended before or after sending anything."""

    APPLIED = "applied"
    NOTHING_TO_APPLY = "nothing-to-apply"
    STALE = "stale"
    CANCELLED = "cancelled"
    # A saved plan whose every change is already live: nothing was sent (plans are single-use).
    ALREADY_APPLIED = "already-applied"


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
    # Handle SIGINT/SIGTERM while sending (the command line does; a library caller may not):
    # the first stops new requests and lets those in flight finish (for at most ``grace``
    # seconds), a second aborts them; the result then says ``interrupted``.
    signals: bool = False
    notice: Callable[[str], None] = _say_nothing
    grace: float | None = None
    # Called after each round of polling with the pipes still waited for (progress).
    waiting: Callable[[tuple[Waiting, ...]], None] = _nobody_waits
    # Called once, just before the first change is sent (the caller can then tell an
    # interruption before sending from one after).
    sending: Callable[[], None] = _do_nothing


@dataclass(frozen=True)
class ApplyRequest:
    """What to apply: the manifests (or a saved plan) and how."""

    scope: Scope
    options: PlanOptions = field(default_factory=PlanOptions)
    saved_plan: Plan | None = None
    partial: bool = False
    lock_timeout: float = 0.0
    # Waiting for pipes after state commands and creates (--wait/--no-wait, --wait-timeout).
    wait: WaitOptions = field(default_factory=WaitOptions)
    # Deprecated (``Scope.start_reading``), removed in the next release: manifests are read here.
    reading: Reading | None = None


@dataclass(frozen=True)
class ApplyResult:
    """What one apply did: the plan, each action's result, the stale actions refused."""

    status: ApplyStatus
    plan: Plan
    results: tuple[ActionResult, ...] = ()
    stale: Mapping[str, str] = field(default_factory=dict)
    applied: Mapping[str, str] = field(default_factory=dict)
    # The signal that interrupted the apply (SIGINT, SIGTERM), if one did.
    interrupted: signal.Signals | None = None
    # The interfaces the run gave up while sending (their actions were cut off).
    stopped: tuple[InterfaceDown, ...] = ()

    @property
    def exit_code(self) -> int:
        """Return the exit status: 128 + the signal when interrupted, else 1 on anything undone."""
        if self.interrupted is not None:
            return 128 + int(self.interrupted)
        return 1 if self.failed else 0

    def counts(self) -> dict[str, int]:
        """Count the actions' results by outcome."""
        return count_outcomes(self.results)

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
    scope = request.scope
    saved = request.saved_plan
    if saved is not None and saved.environment != scope.environment:
        made = f"environment {saved.environment}" if saved.environment else "no environment"
        runs = f"targets {scope.environment}" if scope.environment else "has no environment"
        raise ConfigError(
            f"the saved plan was made for {made}; this run {runs}: apply it with "
            + (f"--env {saved.environment}" if saved.environment else "no --env")
            + ", or plan again for this environment"
        )
    if saved is not None:
        # What a plan contains was decided when it was made; --target narrows what is applied.
        shaping = [
            f
            for f, on in (
                ("--prune", request.options.prune),
                ("--replace", request.options.replace),
            )
            if on
        ]
        if shaping:
            raise ConfigError(
                f"{' and '.join(shaping)} cannot be used with --plan: they decide what a plan "
                "contains, so pass them to `plan --out` instead"
            )
        saved = select_actions(saved, request.options.targets)
    if not scope.paths and saved is not None:
        scope = dataclasses.replace(scope, paths=saved.manifest_paths)
    paths = scope.paths
    if request.reading is not None:
        warnings.warn(DEPRECATED_READING, DeprecationWarning, stacklevel=2)
        resources = request.reading.result()
    else:
        resources = scope.load() if paths else []
    backend = scope.backend()
    config.check()
    with (
        contextlib.closing(backend),
        locked_state(backend, timeout=request.lock_timeout) as state,
    ):
        state.claim(scope.environment, scope.organization, scope.workspace)
        async with Client(config, transport=transport) as client:
            options = request.options
            if saved is None:
                options = dataclasses.replace(options, complete_kinds=scope.complete_kinds())
            run = _Run(client, state, hooks, options, request.wait)
            if saved is not None:
                return await run.saved(saved, resources, partial=request.partial)
            return await run.fresh(resources, paths)


@dataclass
class _Run:
    client: Client
    state: State
    hooks: ApplyHooks
    options: PlanOptions
    wait: WaitOptions

    async def fresh(self, resources: list[Resource], paths: tuple[str, ...]) -> ApplyResult:
        bar = self.hooks.progress("reading live state")
        try:
            plan = await plan_resources(
                self.client, resources, self.state, self.options, manifest_paths=paths, progress=bar
            )
        finally:
            bar.close()
        return await self.carry_out(plan, secrets={}, stale={}, applied={})

    async def saved(self, plan: Plan, resources: list[Resource], *, partial: bool) -> ApplyResult:
        secrets = resolve_saved_secrets(plan, resources, self.state.key)
        check = await find_stale(self.client, plan, self.state)
        if check.all_applied(plan):
            return ApplyResult(ApplyStatus.ALREADY_APPLIED, plan, applied=check.applied)
        if check.stale and not partial:
            return ApplyResult(ApplyStatus.STALE, plan, stale=check.stale, applied=check.applied)
        return await self.carry_out(plan, secrets=secrets, stale=check.stale, applied=check.applied)

    async def forget_secrets(self, plan: Plan) -> None:
        # Nothing to send, but a secret the manifests stopped stating is forgotten all the same:
        # stating it again later must send it (someone may have changed it meanwhile).
        # An adopted pipe is recorded likewise: from now on its id, not its name, binds it.
        forgetting = [
            a
            for a in plan.actions
            if not a.errors and (a.forget_secrets or (a.kind == "Pipe" and a.bound == "adopted"))
        ]
        if forgetting:
            recorder = StateRecorder(self.state)
            for action in forgetting:
                await recorder.unchanged(action)
            await recorder.flush()

    async def carry_out(
        self,
        plan: Plan,
        *,
        secrets: Mapping[str, Mapping[JsonPath, Any]],
        stale: Mapping[str, str],
        applied: Mapping[str, str],
    ) -> ApplyResult:
        self.hooks.show_plan(plan)
        blind = () if self.options.new_state else new_state_creates(plan, self.state)
        if blind:
            raise StateError(new_state_message(blind, self.state, refusing=True))
        if not plan.changed:
            await self.forget_secrets(plan)
            return ApplyResult(ApplyStatus.NOTHING_TO_APPLY, plan, stale=stale)
        if not self.hooks.confirm(plan):
            return ApplyResult(ApplyStatus.CANCELLED, plan, stale=stale)
        bar = self.hooks.progress("applying", len(plan.actions), "action")
        applier = Applier(
            self.client,
            self.state,
            secrets=secrets,
            progress=bar,
            wait=self.wait,
            waiting=self.hooks.waiting,
        )
        watch = _Interrupts(applier, self.hooks, self.client.config.timeout)
        try:
            with watch:
                self.hooks.sending()
                results = await applier.apply(plan, stale=stale, applied=applied)
        finally:
            bar.close()
        return ApplyResult(
            ApplyStatus.APPLIED,
            plan,
            results,
            stale,
            applied,
            interrupted=watch.received,
            stopped=self.client.health.stopped(),
        )


class _Interrupts:
    """SIGINT/SIGTERM while applying: stop starting requests, then (second signal or grace over)
    abort those in flight. Installed on the running loop only when the hooks ask for it."""

    def __init__(self, applier: Applier, hooks: ApplyHooks, timeout: float) -> None:
        self.applier = applier
        self.hooks = hooks
        # In-flight requests end within their own timeout (no retry starts after a stop).
        self.grace = hooks.grace if hooks.grace is not None else timeout + 1.0
        self.received: signal.Signals | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._installed: dict[signal.Signals, Any] = {}

    def __enter__(self) -> _Interrupts:
        if self.hooks.signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._on_signal, sig)
                self._installed[sig] = previous
        return self

    def __exit__(self, *exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig, previous in self._installed.items():
            loop.remove_signal_handler(sig)
            # remove_signal_handler leaves Python's defaults; the command line's own handlers
            # (asyncio's SIGINT, SIGTERM as an interrupt) must cover what follows.
            if previous is not None:
                signal.signal(sig, previous)
        if self._timer is not None:
            self._timer.cancel()

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.received is not None:
            self.hooks.notice(f"{sig.name} again: aborting the requests in flight.")
            self.applier.abort()
            return
        self.received = sig
        in_flight = self.applier.stop(sig.name)
        if not in_flight:  # nothing to wait for (waits for the request budget end at once)
            self.hooks.notice(f"Interrupted by {sig.name}: no new requests; none in flight.")
        else:
            self.hooks.notice(
                f"Interrupted by {sig.name}: no new requests; waiting up to {self.grace:g}s for "
                f"the {in_flight} in flight to finish (interrupt again to abort them)."
            )
        self._timer = asyncio.get_running_loop().call_later(self.grace, self.applier.abort)
