"""The watch loop: plan on an interval, apply drift in correct mode, one leader at a time.

A cycle asks the caller's ``load`` for what to reconcile — the client configuration, the scope
and the plan options — so the manifests, the env file and (after SIGHUP) the project file are
read again each time; then it calls ``compute_plan`` and, in correct mode when the plan has
changes, ``apply_plan`` (which takes the state lock and plans again under it, so a change made
meanwhile is never overwritten). Detect mode never writes. Cycles start ``interval`` plus a
random jitter apart and never overlap; after a failed cycle the next one comes sooner, the wait
doubling from a second up to the interval. A manifest error ends the cycle before any request:
nothing is ever applied from a partial set.

Only the lease holder runs cycles (the state backend's ``Lease``); a task renews the lease every
third of ``--lease`` while the loop runs. ``Watcher.stop`` ends the loop: a cycle that is only
reading is cancelled, an apply in flight is allowed to finish (up to ``grace`` seconds) so that
its state is saved, and the lease is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reconciler.apply.results import Outcome
from reconciler.apply.run import AUTO_APPROVE, ApplyHooks, ApplyRequest, ApplyStatus, apply_plan
from reconciler.client.api import ApiConfig, observe_clients
from reconciler.metrics import RunRecord
from reconciler.model.errors import ManifestError, ManifestErrors, ReconcileError, StateError
from reconciler.model.secretfiles import SecretFiles, secret_files
from reconciler.model.secrets import variables
from reconciler.plan.compute import PlanOptions
from reconciler.plan.run import compute_plan, no_progress
from reconciler.plan.scope import Scope
from reconciler.state.backend import Lease, describe_holder
from reconciler.watch.metrics import WatchMetrics
from reconciler.watch.status import Cycle, CycleResult, WatchStatus

__all__ = ["Mode", "Target", "WatchOptions", "Watcher"]


# The first wait after a failed cycle; it doubles up to the interval.
FIRST_BACKOFF = 1.0


class Mode(StrEnum):
    """What a cycle does with the drift it finds."""

    DETECT = "detect"
    CORRECT = "correct"


@dataclass(frozen=True)
class Target:
    """What one cycle reconciles, as the settings say at the cycle's start."""

    config: ApiConfig
    scope: Scope
    options: PlanOptions = field(default_factory=PlanOptions)
    # The variables manifests' ``fromEnv`` references read (None: the process environment).
    variables: Mapping[str, str] | None = None
    # Where ``fromFile`` references may read (None: as the command was started).
    files: SecretFiles | None = None


@dataclass(frozen=True)
class WatchOptions:
    """How the loop runs."""

    interval: float = 300.0
    mode: Mode = Mode.DETECT
    jitter: float = 0.1  # a fraction of the interval
    lease: float = 30.0
    lock_timeout: float = 10.0
    grace: float = 10.0  # seconds an apply in flight may take to finish after stop


def _quiet(message: str) -> None:
    return None


def _ignore(cycle: Cycle) -> None:
    return None


class Watcher:
    """One watch process's loop; ``status`` and ``metrics`` are what the endpoint serves."""

    def __init__(
        self,
        load: Callable[[bool], Target],
        lease: Lease,
        options: WatchOptions,
        status: WatchStatus,
        *,
        on_cycle: Callable[[Cycle], None] = _ignore,
        notice: Callable[[str], None] = _quiet,
    ) -> None:
        self.load = load  # load(reload_project) -> Target
        self.lease = lease
        self.options = options
        self.status = status
        self.metrics = WatchMetrics()
        self.on_cycle = on_cycle
        self.notice = notice
        self._stop = asyncio.Event()
        self._reload = False
        self._sending = False  # an apply is sending its requests
        self.signals = (
            False  # whether SIGTERM/SIGINT/SIGHUP are this watcher's (``handle_signals``)
        )
        self._backoff = 0.0
        self._number = 0
        self._run: RunRecord | None = None  # the current cycle's run record (metrics)

    def handle_signals(self) -> None:
        """Take SIGTERM/SIGINT (stop) and SIGHUP (reload) on the running loop.

        While an apply sends, apply's own handlers take SIGTERM/SIGINT (no new request, those
        in flight finish, the state is saved); the watcher then stops and takes them back.
        """
        loop = asyncio.get_running_loop()
        self.signals = True
        loop.add_signal_handler(signal.SIGTERM, self.stop)
        loop.add_signal_handler(signal.SIGINT, self.stop)
        loop.add_signal_handler(signal.SIGHUP, self.reload)

    def release_signals(self) -> None:
        """Give the signals back (``handle_signals`` undone)."""
        if self.signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                loop.remove_signal_handler(sig)
            self.signals = False

    def stop(self) -> None:
        """Ask the loop to end (SIGTERM/SIGINT)."""
        self._stop.set()

    def reload(self) -> None:
        """Read the project file again before the next cycle (SIGHUP)."""
        self._reload = True
        self.notice("SIGHUP: the project file is read again before the next cycle.")

    @property
    def stopping(self) -> bool:
        """Tell whether stop was asked for."""
        return self._stop.is_set()

    async def run(self) -> None:
        """Run cycles while this replica leads, until ``stop``; release the lease at the end."""
        self.status.running = True
        renewing = asyncio.create_task(self._keep_lease())
        try:
            while not self._stop.is_set():
                if not self.status.leader:
                    await self._sleep(min(1.0, self.options.lease / 3))
                    continue
                await self._one_cycle()
                # A cycle leaves a plan's worth of cyclic garbage, much of it already in the
                # oldest generation, which the collector's own passes seldom visit: a full pass
                # while the loop idles keeps a watch of weeks flat.
                gc.collect()
                await self._sleep(self._next_wait())
        finally:
            self.status.running = False
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            await asyncio.to_thread(self.lease.release)
            self._set_leader(False, None)

    async def _sleep(self, seconds: float) -> None:
        self.status.next_cycle = time.time() + seconds if self.status.leader else None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=max(0.0, seconds))

    def _next_wait(self) -> float:
        interval = self.options.interval
        if self._backoff:
            return self._backoff
        return interval + random.uniform(0, interval * self.options.jitter)

    async def _keep_lease(self) -> None:
        period = max(0.2, self.options.lease / 3)
        while True:
            try:
                leader = await asyncio.to_thread(self.lease.try_acquire)
                holder = None if leader else await asyncio.to_thread(self.lease.holder)
                self.status.lease_error = ""
            except ReconcileError as exc:
                leader, holder = False, None
                if str(exc) != self.status.lease_error:
                    self.notice(f"lease: {exc}")
                self.status.lease_error = str(exc)
            self.status.lease_checked = True
            self._set_leader(leader, holder)
            await asyncio.sleep(period)

    def _set_leader(self, leader: bool, holder: dict[str, Any] | None) -> None:
        if leader != self.status.leader and self.status.running:
            self.notice(
                f"leader: this replica holds the lease {self.lease.description}"
                if leader
                else f"standby: {describe_holder(holder)} holds the lease {self.lease.description}"
            )
        self.status.leader = leader
        self.status.holder = None if leader else holder
        self.metrics.leader.set(1 if leader else 0)

    async def _one_cycle(self) -> None:
        self._number += 1
        started, clock = time.time(), time.monotonic()
        self._run = run = RunRecord("watch")
        with observe_clients() as stats:
            task = asyncio.create_task(self._cycle(self._number, started))
            stopper = asyncio.create_task(self._stop.wait())
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                # Reads are cancelled at once (nothing is written); an apply that is sending
                # gets ``grace`` seconds to finish its requests and save the state.
                if self._sending:
                    await asyncio.wait({task}, timeout=self.options.grace)
                task.cancel()
            stopper.cancel()
            try:
                cycle = await task
            except asyncio.CancelledError:
                return  # stopped before the cycle ended: nothing to report
        requests: dict[str, int] = {}
        for item in stats:
            for interface, count in item.requests.items():
                requests[interface] = requests.get(interface, 0) + count
        run.add_client_stats(stats)
        cycle.requests = sum(requests.values())
        cycle.duration = time.monotonic() - clock
        ended = time.time()
        if cycle.failed:
            self._backoff = min(self.options.interval, max(FIRST_BACKOFF, self._backoff * 2))
        else:
            self._backoff = 0.0
        if cycle.succeeded:
            self.status.last_success = ended
        self.status.cycles.append(cycle)
        self.metrics.observe(cycle, requests, ended, run)
        self.on_cycle(cycle)

    async def _cycle(self, number: int, started: float) -> Cycle:
        reload, self._reload = self._reload, False
        try:
            target = self.load(reload)
            with _variables(target):
                computed = await compute_plan(target.config, target.scope, target.options)
        except (ManifestErrors, ManifestError) as exc:
            errors = exc.errors if isinstance(exc, ManifestErrors) else [exc]
            self.status.record_invalid(started, True)
            return Cycle(
                number,
                started,
                CycleResult.INVALID,
                0.0,
                message=f"{len(errors)} manifest error(s): nothing was sent",
                errors=[e.to_dict() for e in errors],
            )
        except ReconcileError as exc:
            return Cycle(number, started, CycleResult.FAILED, 0.0, message=str(exc))
        plan = computed.plan
        if self._run is not None:
            self._run.count_plan(plan)
        now = time.time()
        self.status.record_invalid(now, False)
        self.status.record_plan(plan.actions, now)
        found_by_kind: dict[str, int] = {}
        for action in plan.changed:
            found_by_kind[action.kind] = found_by_kind.get(action.kind, 0) + 1
        cycle = Cycle(
            number,
            started,
            CycleResult.IN_SYNC,
            0.0,
            found=len(plan.changed),
            found_by_kind=found_by_kind,
        )
        if plan.failed:
            cycle.result = CycleResult.FAILED
            cycle.message = f"{len(plan.failed)} resource(s) cannot be planned"
        if plan.changed and self.options.mode is Mode.DETECT:
            cycle.result = CycleResult.FAILED if plan.failed else CycleResult.DRIFT
        if plan.changed and self.options.mode is Mode.CORRECT:
            with _variables(target):
                await self._correct(target, cycle)
        return cycle

    def _progress(self, description: str, total: int | None = None, unit: str = "req") -> Any:
        # apply_plan shows the "applying" phase once it starts sending: from then on a stop
        # lets it finish rather than cancelling it.
        if description == "applying":
            self._sending = True
        return no_progress(description, total, unit)

    async def _correct(self, target: Target, cycle: Cycle) -> None:
        request = ApplyRequest(
            scope=target.scope, options=target.options, lock_timeout=self.options.lock_timeout
        )
        hooks = ApplyHooks(
            confirm=AUTO_APPROVE, progress=self._progress, signals=self.signals, notice=self.notice
        )
        try:
            result = await apply_plan(target.config, request, hooks)
        except ReconcileError as exc:
            cycle.result, cycle.message = CycleResult.FAILED, str(exc)
            return
        finally:
            self._sending = False
            if self.signals:
                self.handle_signals()  # apply's handlers gave SIGTERM/SIGINT back to Python's
        # Actions an interrupt left unstarted are not failures: they stay drifted for the
        # next run. Any other undone action still makes the cycle a failed one.
        interrupted = result.interrupted
        not_started = {
            r.key for r in result.results if interrupted and r.outcome is Outcome.SKIPPED
        }
        if interrupted is not None:
            self.stop()
        if self._run is not None and result.status is ApplyStatus.APPLIED:
            self._run.count_apply(result, result.plan)
        now = time.time()
        self.status.record_plan(result.plan.actions, now)
        self.status.record_results([r for r in result.results if r.key not in not_started], now)
        kinds = {a.key: a.kind for a in result.plan.actions}
        for item in result.results:
            if item.outcome is Outcome.APPLIED:
                kind = kinds.get(item.key, item.key.split("/", 1)[0])
                cycle.corrected_by_kind[kind] = cycle.corrected_by_kind.get(kind, 0) + 1
        cycle.corrected = sum(cycle.corrected_by_kind.values())
        undone = [r.key for r in result.results if r.failed and r.key not in not_started]
        if interrupted is not None and not_started and not undone and not result.plan.failed:
            left = sorted(not_started)
            more = f" and {len(left) - 5} more" if len(left) > 5 else ""
            cycle.result, cycle.stopped_by = CycleResult.INTERRUPTED, int(interrupted)
            cycle.message = (
                f"stopped by {interrupted.name} while applying; left for the next cycle: "
                f"{', '.join(left[:5])}{more}"
            )
        elif result.failed:
            undone = [r.key for r in result.results if r.failed] or [
                a.key for a in result.plan.failed
            ]
            cycle.result = CycleResult.FAILED
            cycle.message = f"apply left {len(undone)} resource(s) undone: {', '.join(undone[:5])}"
        elif result.status is ApplyStatus.NOTHING_TO_APPLY:
            cycle.result = CycleResult.IN_SYNC  # someone else corrected it first
        else:
            cycle.result = CycleResult.CORRECTED


@contextlib.contextmanager
def _variables(target: Target) -> Iterator[None]:
    """Resolve ``fromEnv`` from the target's variables (the process environment when None)
    and ``fromFile`` inside the target's secret directories (as started when None)."""
    with contextlib.ExitStack() as stack:
        if target.variables is not None:
            stack.enter_context(variables(target.variables))
        if target.files is not None:
            stack.enter_context(secret_files(target.files))
        yield


async def refuse_if_held(lease: Lease) -> None:
    """Raise ``StateError`` naming the holder when an exclusive lease is held elsewhere."""
    if lease.exclusive and not await asyncio.to_thread(lease.try_acquire):
        holder = await asyncio.to_thread(lease.holder)
        raise StateError(
            f"another watch already runs on this state: {describe_holder(holder)} holds "
            f"{lease.description}; stop it first (a second watch on a local state would plan "
            "and apply twice)"
        )
