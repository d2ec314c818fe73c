"""Reading a plan's pipes with as few requests as possible.

The services list once per organization and only when a pipe names its service; then one
list call per service when the server has it (probing once, then falling back to one GET per
pipe on 404/405), each reverse private endpoint once however many pipes name it. Which live
pipe a manifest without ``pipeId`` is (recorded, adopted by name, or new) is decided by
``binding.PipeBinder`` as each service's list is settled. Each pipe is handed on
(``on_pipe``) the moment everything about it is known, so the caller plans it while other
reads are still in flight.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.binding import CANNOT_CREATE, PipeBinder
from reconciler.client.livestate import LiveState, Observed
from reconciler.client.paths import pipes_path
from reconciler.model.errors import (
    ApiError,
    AuthenticationFailed,
    NotFound,
    Unsupported,
    suggest,
)
from reconciler.model.identity import Binding, Bound, Identities
from reconciler.model.json import JsonObject, as_items, as_mapping
from reconciler.model.resources import Resource

# The form of an id: anything else in reversePrivateEndpointIds stands for an endpoint the same
# apply creates (the plan's "known after create"), which has no status to read yet.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# A pipe list this long (about 2 MB of JSON, ten times that parsed) is read one at a time.
LARGE_LIST = 1000
# While a large list is planned, other reads (the next list's bytes) move this often (seconds):
# often enough to read the next list as it comes, rarely enough to cost nothing (a turn of the
# event loop is ~40 µs).
YIELD_AFTER = 0.002


@dataclass
class PipeReader:
    """Reads the live pipes of a plan into ``live`` (``Fetcher`` runs it beside the rest)."""

    client: Client
    live: LiveState
    identities: Identities
    progress: Callable[[int], None]
    on_pipe: Callable[[Resource], None]
    binder: PipeBinder = field(init=False)

    def __post_init__(self) -> None:
        self.binder = PipeBinder(self.identities, self.live.bindings, self.live.pipe_ids)

    def _observed(self, resource: Resource, observed: Observed) -> None:
        """Record what was found for a pipe; hand it on unless endpoint statuses are pending."""
        self.live.pipes[resource.key] = observed
        if observed.live is None or not _endpoint_ids(resource):
            self.on_pipe(resource)

    async def fetch(self, pipes: Sequence[Resource]) -> None:
        """Read the live pipes of ``pipes`` and hand each on as soon as it is known."""
        if not pipes:
            return
        await self._resolve_services(pipes)
        by_service: dict[tuple[str, str], list[Resource]] = {}
        for resource in pipes:
            ids = self.live.pipe_ids.get(resource.key)
            if ids is not None:
                by_service.setdefault((ids.organization_id, ids.service_id), []).append(resource)
        groups = list(by_service.items())
        if groups:
            await self._fetch_service_lists(groups)
        await self._check_endpoints(pipes)

    async def _fetch_service_lists(
        self, groups: list[tuple[tuple[str, str], list[Resource]]]
    ) -> None:
        """Read the first service's pipes, then the others': all at once, or in turn if large.

        The other lists are requested as soon as the first one's bytes are in (the server has
        shown that it lists pipes), before the first is decoded: each request of the opening
        burst started earlier is a place of the rate budget free earlier for the rest of the
        run. Thousands of pipes per service (as many manifests, or a first list that long):
        each parsed list takes tens of MB until its pipes are planned, so lists are then read
        one at a time, the next requested while the current one is planned (the server builds
        it meanwhile) and kept as bytes until its turn. Each list is reported exactly as
        ``list_pipes`` would report it, error or not.
        """
        (key, members), rest = groups[0], groups[1:]
        small = all(len(group) < LARGE_LIST for _, group in groups)
        ahead: dict[int, asyncio.Task[Callable[[], list[JsonObject]]]] = {}

        def request_others() -> None:
            for index, ((org, service), _) in enumerate(rest[: len(rest) if small else 1], 1):
                ahead[index] = asyncio.create_task(
                    reads.list_pipes_undecoded(self.client, org, service)
                )

        try:
            first = await self._fetch_service_pipes(
                key, members, hold=True, get_each=False, listed=request_others
            )
            if self.live.capabilities.pipes_list is False:
                # No list endpoint: every service's pipes are read one GET each, all from one
                # queue, so the first service's last GETs never run with the others held back.
                await asyncio.gather(*(self._get_pipe(r) for _, group in groups for r in group))
                return
            if first is None or len(first) < LARGE_LIST:
                await self._all_at_once(key, members, first, groups, ahead)
            else:
                await self._in_turn(first, groups, ahead)
        finally:
            pending = [task for task in ahead.values() if not task.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _all_at_once(
        self,
        key: tuple[str, str],
        members: list[Resource],
        first: dict[str, JsonObject] | None,
        groups: list[tuple[tuple[str, str], list[Resource]]],
        ahead: dict[int, asyncio.Task[Callable[[], list[JsonObject]]]],
    ) -> None:
        """Small lists: the others are requested before the first is planned, and planning
        yields now and then, so the server builds them and their bytes arrive meanwhile."""
        others = asyncio.gather(
            *(
                self._settle_ahead(k, m, ahead[i])
                if i in ahead
                else self._fetch_service_pipes(k, m)
                for i, (k, m) in enumerate(groups)
                if i
            )
        )
        try:
            if first is not None:
                await self._settle_list(key, members, first)
        except BaseException:
            others.cancel()
            await asyncio.gather(others, return_exceptions=True)
            raise
        await others

    async def _settle_ahead(
        self,
        key: tuple[str, str],
        members: list[Resource],
        ahead: asyncio.Task[Callable[[], list[JsonObject]]],
    ) -> None:
        """Settle a list requested ahead, as ``_fetch_service_pipes`` settles one it reads."""
        listed = await self._decoded(ahead)
        if isinstance(listed, ApiError):
            self._list_failed(members, listed)
        else:
            await self._settle_list(key, members, listed)

    async def _in_turn(
        self,
        first: dict[str, JsonObject],
        groups: list[tuple[tuple[str, str], list[Resource]]],
        ahead: dict[int, asyncio.Task[Callable[[], list[JsonObject]]]],
    ) -> None:
        """Large lists: each is planned before the next one is decoded (one parsed at a time)."""
        current: dict[str, JsonObject] | ApiError = first
        del first
        for index, (key, members) in enumerate(groups):
            following = index + 1
            if following < len(groups) and following not in ahead:
                org, service = groups[following][0]
                ahead[following] = asyncio.create_task(
                    reads.list_pipes_undecoded(self.client, org, service)
                )
                await asyncio.sleep(0)  # the request sets off before planning starts
            if isinstance(current, ApiError):
                self._list_failed(members, current)
            else:
                await self._settle_list(key, members, current)
            current = {}  # this list is let go before the next one is decoded
            if following in ahead:
                current = await self._decoded(ahead.pop(following))

    async def _decoded(
        self, ahead: asyncio.Task[Callable[[], list[JsonObject]]]
    ) -> dict[str, JsonObject] | ApiError:
        """Wait for a list read ahead and decode it now (its error, if any, is returned)."""
        try:
            listed = _decode(await ahead)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            return exc
        self.progress(1)
        return listed

    async def _resolve_services(self, pipes: Sequence[Resource]) -> None:
        need_names: dict[str, list[Resource]] = {}
        for resource in pipes:
            spec = resource.spec
            org = str(spec.get("organizationId", ""))
            if "serviceId" in spec:
                self.live.pipe_ids[resource.key] = self.binder.ids(
                    resource, org, str(spec["serviceId"])
                )
            else:
                need_names.setdefault(org, []).append(resource)

        async def resolve(org: str, members: list[Resource]) -> None:
            services = self.live.services.get(org)  # read already for endpoint manifests
            if services is None:
                try:
                    services = await reads.list_services(self.client, org)
                except AuthenticationFailed:  # the run stops: never one resource's error
                    raise
                except ApiError as exc:
                    for resource in members:
                        self._observed(resource, Observed(error=str(exc)))
                    return
                self.progress(1)
            names: dict[str, list[str]] = {}
            for service in services:
                names.setdefault(str(service.get("name")), []).append(str(service.get("id")))
            for resource in members:
                name = str(resource.spec.get("service"))
                found = names.get(name, [])
                if len(found) == 1:
                    self.live.pipe_ids[resource.key] = self.binder.ids(resource, org, found[0])
                elif not found:
                    known = ", ".join(sorted(names)) or "none"
                    self._observed(
                        resource,
                        Observed(
                            error=f"service {name!r} not found in organization {org}"
                            f"{suggest(name, names)} (services: {known})"
                        ),
                    )
                else:
                    self._observed(
                        resource,
                        Observed(
                            error=f"service name {name!r} is ambiguous ({len(found)} services); use serviceId"
                        ),
                    )

        await asyncio.gather(*(resolve(org, members) for org, members in need_names.items()))

    async def _fetch_service_pipes(
        self,
        key: tuple[str, str],
        members: list[Resource],
        *,
        hold: bool = False,
        get_each: bool = True,
        listed: Callable[[], None] | None = None,
    ) -> dict[str, JsonObject] | None:
        """Read and settle one service's pipes: its list, else one GET per pipe.

        With ``hold``, a list that was read is returned (by pipe id) instead of settled;
        without ``get_each``, pipes the list cannot give are left to the caller to GET.
        ``listed`` is called once the list's bytes are in, before they are decoded.
        """
        org, service = key
        if self.live.capabilities.pipes_list is not False:
            try:
                undecoded = await reads.list_pipes_undecoded(self.client, org, service)
                if listed is not None:
                    listed()
                    await self.client.on_the_wire()  # they leave before the decoding
                listed_pipes = _decode(undecoded)
            except AuthenticationFailed:  # the run stops: never one resource's error
                raise
            except ApiError as exc:
                if not isinstance(exc, Unsupported) or self.live.capabilities.pipes_list:
                    self._list_failed(members, exc)
                    return None
                self.live.capabilities.pipes_list = False
                self.live.notes.append(
                    "the server has no pipe list endpoint: pipes are read one GET each"
                )
            else:
                self.live.capabilities.pipes_list = True
                self.progress(1)
                if not hold:  # yielding: other lists' answers are heard while this is planned
                    await self._settle_list(key, members, listed_pipes)
                return listed_pipes
        if get_each:
            await asyncio.gather(*(self._get_pipe(resource) for resource in members))
        return None

    def _list_failed(self, members: list[Resource], error: ApiError) -> None:
        for resource in members:
            path = self.live.pipe_ids[resource.key].path
            self._observed(resource, Observed(error=str(error), path=path))

    async def _settle_list(
        self, key: tuple[str, str], members: list[Resource], by_id: dict[str, JsonObject]
    ) -> None:
        """Hand each member its live pipe from a service's list (each kept until it is planned),
        letting other reads move (the next list's bytes) every few pipes."""
        self.binder.bind_all(key[1], members, by_id)
        turn = time.perf_counter()
        for resource in members:
            self._settle_one(key[1], resource, by_id)
            if time.perf_counter() - turn >= YIELD_AFTER:
                await asyncio.sleep(0)
                turn = time.perf_counter()

    def _settle_one(self, service: str, resource: Resource, by_id: dict[str, JsonObject]) -> None:
        ids = self.live.pipe_ids[resource.key]
        binding = self.live.bindings[resource.key]
        if binding.error is not None:
            self._observed(resource, Observed(error=binding.error, path=ids.path))
            return
        if binding.how is Bound.NEW:
            path = pipes_path(ids.organization_id, ids.service_id)
            self._observed(resource, Observed(path=path))
            return
        pipe = by_id.pop(ids.pipe_id, None)
        if pipe is None:
            error = f"pipe {ids.pipe_id} not found in service {service}"
            self._observed(resource, Observed(error=error, path=ids.path))
        else:
            self._observed(resource, Observed(live=pipe, path=ids.path))

    async def _get_pipe(self, resource: Resource) -> None:
        ids = self.live.pipe_ids[resource.key]
        if not ids.pipe_id:
            where = resource.locate("spec")
            self._observed(resource, Observed(error=f"{where}: {CANNOT_CREATE}"))
            return
        self.live.bindings[resource.key] = Binding(
            Bound.PINNED if resource.spec.get("pipeId") else Bound.RECORDED,
            ids.pipe_id,
            record=self.identities.record(resource.name),
            renamed_from=self.identities.renamed.get(resource.name),
        )
        try:
            pipe = await reads.get_pipe(self.client, ids, name=resource.name)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            self._observed(resource, Observed(error=str(exc), path=ids.path))
            return
        self.progress(1)
        self._observed(resource, Observed(live=pipe, path=ids.path))

    async def _check_endpoints(self, pipes: Sequence[Resource]) -> None:
        wanted: dict[tuple[str, str, str], list[Resource]] = {}
        for resource in pipes:
            ids = self.live.pipe_ids.get(resource.key)
            observed = self.live.pipes.get(resource.key)
            if ids is None or observed is None or observed.live is None:
                continue
            for endpoint_id in _endpoint_ids(resource):
                wanted.setdefault(
                    (ids.organization_id, ids.service_id, str(endpoint_id)), []
                ).append(resource)
        # Endpoints listed for endpoint manifests of the same plan are not read again.
        results: dict[tuple[str, str, str], str | None] = {
            (found.organization_id, found.service_id, str(e.get("id"))): str(e.get("status"))
            for found in self.live.endpoints.values()
            for e in found.listed
        }

        async def check(key: tuple[str, str, str]) -> None:
            org, service, endpoint_id = key
            try:
                endpoint = await reads.get_endpoint(self.client, org, service, endpoint_id)
            except NotFound:
                results[key] = None
                return
            except AuthenticationFailed:  # the run stops: never one resource's error
                raise
            except ApiError as exc:
                results[key] = f"unknown ({exc})"
                return
            self.progress(1)
            results[key] = str(endpoint.get("status"))

        await asyncio.gather(*(check(key) for key in wanted if key not in results))
        per_pipe: dict[str, dict[str, str | None]] = {}
        for key, members in wanted.items():
            for resource in members:
                per_pipe.setdefault(resource.key, {})[key[2]] = results.get(key)
        settled = {r.key: r for members in wanted.values() for r in members}
        for resource_key, statuses in per_pipe.items():
            old = self.live.pipes[resource_key]
            self.live.pipes[resource_key] = Observed(
                live=old.live, error=old.error, path=old.path, endpoint_status=statuses
            )
            self.on_pipe(settled[resource_key])


def _decode(decode: Callable[[], list[JsonObject]]) -> dict[str, JsonObject]:
    """Decode a pipe list and index it by id (the list itself is let go)."""
    return {str(p.get("id")): p for p in decode()}


def _endpoint_ids(resource: Resource) -> list[str]:
    """Return the reverse private endpoint ids a kafka pipe names (their status is read)."""
    kafka = as_mapping(as_mapping(resource.spec.get("source")).get("kafka"))
    # An id an endpoint created in the same apply will have is not read (it is not one yet).
    return [
        str(i) for i in as_items(kafka.get("reversePrivateEndpointIds")) if _UUID.fullmatch(str(i))
    ]
