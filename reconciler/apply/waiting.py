"""Waiting for pipes to reach a state after a state command or a create.

A state command is answered at once; the pipe then moves through transitional states
(Provisioning, Stopping, Pausing, …) to a settled one. Apply waits for each pipe to reach the
state it asked for, or a failed state, or ``--wait-timeout``. The service allows 10 management
requests per 10 s, so the waits of a whole apply share one poller: each round reads the pipe
list of every service with a pipe waited for — one request per service, however many pipes
wait in it — or, where the server cannot list pipes, one GET per pipe. Rounds start soon
(transitions can take well under a second) and space out to ``max_interval``. All reads go
through the one read layer (``reads``). A new reverse private endpoint is waited for the same
way until its ``status`` is Ready: one endpoint list per service per round.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.paths import PipeIds
from reconciler.model.apierrors import ApiError, AuthenticationFailed, Unsupported
from reconciler.model.endpoints import FAILED_STATUSES
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.plan.runstate import FAILED_STATES

__all__ = ["DEFAULT_WAIT_TIMEOUT", "WaitOptions", "Waiting"]


DEFAULT_WAIT_TIMEOUT = 600.0
# Each round waits this much longer than the one before (up to ``max_interval``): a
# transition of 2.5 s is seen by ~2.7 s, one of minutes costs a request per 5 s per service.
GROWTH = 1.4


@dataclass(frozen=True)
class WaitOptions:
    """How apply waits after state commands and creates."""

    # Wait for the last state of each pipe (--wait / --no-wait). A state a later request
    # needs (Paused before a table-mapping edit) is waited for either way.
    wait: bool = True
    timeout: float = DEFAULT_WAIT_TIMEOUT
    first_interval: float = 0.25
    max_interval: float = 5.0


class Subject(StrEnum):
    """What is waited for: a pipe (its ``state``) or a reverse private endpoint (``status``)."""

    PIPE = "pipe"
    ENDPOINT = "reverse private endpoint"

    @property
    def field(self) -> str:
        """Return the field of the live object that says where it is."""
        return "state" if self is Subject.PIPE else "status"

    @property
    def failed(self) -> frozenset[str]:
        """Return the values it never leaves for a wanted one by itself."""
        return FAILED_STATES if self is Subject.PIPE else FAILED_STATUSES


class WaitStatus(StrEnum):
    """How a wait ended."""

    REACHED = "reached"
    FAILED = "failed"
    TIMED_OUT = "timed-out"
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class WaitResult:
    """The end of one wait: the pipe as last read (None if never read) and its state."""

    status: WaitStatus
    state: str
    live: JsonMapping | None
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class Waiting:
    """One pipe being waited for, as progress shows it."""

    name: str
    state: str
    wanted: tuple[str, ...]
    seconds: float
    subject: Subject = Subject.PIPE


@dataclass
class _Waiter:
    ids: PipeIds
    name: str
    accept: frozenset[str]
    started: float
    deadline: float
    future: asyncio.Future[WaitResult]
    subject: Subject = Subject.PIPE
    state: str = "?"
    live: JsonMapping | None = None


@dataclass
class PipeWatcher:
    """Polls the pipes apply waits for, one list request per service per round."""

    client: Client
    options: WaitOptions = field(default_factory=WaitOptions)
    report: Callable[[tuple[Waiting, ...]], None] = lambda waiting: None
    clock: Callable[[], float] = time.monotonic
    _waiters: list[_Waiter] = field(default_factory=list)
    _poller: asyncio.Task[None] | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    # Whether the server lists pipes (None: not asked yet).
    _listable: bool | None = None

    async def until(
        self,
        ids: PipeIds,
        name: str,
        accept: Collection[str],
        *,
        first: JsonLike = None,
        subject: Subject = Subject.PIPE,
    ) -> WaitResult:
        """Wait until the pipe's state is one of ``accept`` (or failed, or the timeout); for an
        endpoint (``subject``), ``ids`` holds its id in ``pipe_id`` and its status is watched."""
        now = self.clock()
        loop = asyncio.get_running_loop()
        waiter = _Waiter(
            ids,
            name,
            frozenset(accept),
            now,
            now + self.options.timeout,
            loop.create_future(),
            subject,
        )
        if isinstance(first, Mapping) and subject.field in first:
            waiter.state, waiter.live = str(first[subject.field]), first
            if self._settle(waiter):
                return waiter.future.result()
        self._waiters.append(waiter)
        self._wake.set()
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        try:
            return await waiter.future
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    async def close(self) -> None:
        """Stop polling (waits still pending are cancelled)."""
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        for waiter in self._waiters:
            waiter.future.cancel()

    def _settle(self, waiter: _Waiter) -> bool:
        """End ``waiter`` if its state is wanted or failed, or its time is up."""
        if waiter.future.done():
            return True
        seconds = self.clock() - waiter.started
        if waiter.state in waiter.accept:
            status = WaitStatus.REACHED
        elif waiter.state in waiter.subject.failed:
            status = WaitStatus.FAILED
        elif self.clock() >= waiter.deadline:
            status = WaitStatus.TIMED_OUT
        else:
            return False
        waiter.future.set_result(WaitResult(status, waiter.state, waiter.live, seconds))
        return True

    async def _poll(self) -> None:
        try:
            await self._rounds()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            for waiter in self._waiters:
                if not waiter.future.done():
                    waiter.future.set_exception(exc)

    async def _rounds(self) -> None:
        interval = self.options.first_interval
        while any(not w.future.done() for w in self._waiters):
            self._wake.clear()
            pending = [w for w in self._waiters if not w.future.done()]
            soonest = min((w.deadline for w in pending), default=self.clock())
            delay = max(0.0, min(interval, soonest - self.clock()))
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
                interval = self.options.first_interval  # a new wait: look soon
            except TimeoutError:
                interval = min(interval * GROWTH, self.options.max_interval)
            await self._round()
            still = tuple(
                Waiting(
                    w.name, w.state, tuple(sorted(w.accept)), self.clock() - w.started, w.subject
                )
                for w in self._waiters
                if not w.future.done()
            )
            if still:
                self.report(still)

    async def _round(self) -> None:
        """Read every waited-for pipe once: one list per service, else one GET per pipe."""
        groups: dict[tuple[Subject, str, str], list[_Waiter]] = {}
        for waiter in self._waiters:
            if not waiter.future.done():
                key = (waiter.subject, waiter.ids.organization_id, waiter.ids.service_id)
                groups.setdefault(key, []).append(waiter)
        await asyncio.gather(
            *(
                self._read(key[1:], members)
                if key[0] is Subject.PIPE
                else self._read_endpoints(key[1:], members)
                for key, members in groups.items()
            )
        )
        for waiter in list(self._waiters):
            self._settle(waiter)

    async def _read(self, key: tuple[str, str], members: list[_Waiter]) -> None:
        try:
            if self._listable is not False:
                try:
                    listed = await reads.list_pipes(self.client, *key)
                except Unsupported:
                    self._listable = False
                else:
                    self._listable = True
                    by_id = {str(p.get("id")): p for p in listed}
                    for waiter in members:
                        self._saw(waiter, by_id.get(waiter.ids.pipe_id))
                    return
            for waiter in members:
                self._saw(waiter, await reads.get_pipe(self.client, waiter.ids, name=waiter.name))
        except AuthenticationFailed:  # the run stops: ``_poll`` hands it to every wait
            raise
        except ApiError as exc:
            self._fail(members, exc)

    async def _read_endpoints(self, key: tuple[str, str], members: list[_Waiter]) -> None:
        try:
            listed = await reads.list_endpoints(self.client, *key)
        except AuthenticationFailed:  # the run stops: ``_poll`` hands it to every wait
            raise
        except ApiError as exc:
            self._fail(members, exc)
            return
        by_id = {str(e.get("id")): e for e in listed}
        for waiter in members:
            self._saw(waiter, by_id.get(waiter.ids.pipe_id))

    def _saw(self, waiter: _Waiter, live: JsonMapping | None) -> None:
        if live is None:
            seconds = self.clock() - waiter.started
            message = f"{waiter.subject} {waiter.ids.pipe_id} is no longer listed in its service"
            waiter.future.set_result(
                WaitResult(WaitStatus.UNREADABLE, waiter.state, None, seconds, message)
            )
            return
        waiter.live, waiter.state = live, str(live.get(waiter.subject.field, "?"))

    def _fail(self, members: list[_Waiter], exc: ApiError) -> None:
        for waiter in members:
            if not waiter.future.done():
                seconds = self.clock() - waiter.started
                waiter.future.set_result(
                    WaitResult(WaitStatus.UNREADABLE, waiter.state, waiter.live, seconds, str(exc))
                )
