"""Reading a plan's pipes with as few requests as possible.

The services list once per organization and only when a pipe names its service; then one
list call per service when the server has it (probing with the first service, then all the
others at once; on 404/405 one GET per pipe known by id), and each reverse private endpoint
a pipe names once however many pipes name it. Lists are kept undecoded: the planner decodes
one at a time, so a 10,000-pipe plan never holds every parsed pipe at once. Which live pipe a
manifest is (recorded, adopted by name, or new) is not decided here but by the planner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.livestate import LiveState, PipeList, PipeNeed
from reconciler.client.paths import PipeIds
from reconciler.model.apierrors import ApiError, AuthenticationFailed, NotFound, Unsupported
from reconciler.model.identity import find_service

__all__: list[str] = []

NO_LIST = "the server has no pipe list endpoint: pipes are read one GET each"


class PipeReader:
    """Reads the live pipes of a plan into ``live`` (``refresh`` runs it beside the rest)."""

    def __init__(self, client: Client, live: LiveState, progress: Callable[[int], None]) -> None:
        self.client = client
        self.live = live
        self.progress = progress

    async def read(self, needs: Sequence[PipeNeed]) -> None:
        """Read the services lists, pipe lists (or pipes) and endpoint statuses ``needs`` name."""
        if not needs:
            return
        await self._services({n.organization_id for n in needs if n.service_id is None})
        groups: dict[tuple[str, str], list[PipeNeed]] = {}
        for need in needs:
            org = need.organization_id
            if need.service_id is not None:
                groups.setdefault((org, need.service_id), []).append(need)
                continue
            listed = self.live.services.get(org)
            found = find_service(listed or (), need.service_name, org, instead="")
            if not isinstance(found, str):
                groups.setdefault((org, str(found["id"])), []).append(need)
        if groups:
            await self._lists(groups)
        await self._endpoint_statuses(groups)

    async def _services(self, orgs: set[str]) -> None:
        """Read each organization's services list once (endpoint manifests may have read it)."""

        async def one(org: str) -> None:
            if org in self.live.services:
                return
            try:
                self.live.services[org] = await reads.list_services(self.client, org)
            except AuthenticationFailed:  # the run stops: never one resource's error
                raise
            except ApiError as exc:
                self.live.services_errors[org] = str(exc)
                return
            self.progress(1)

        await asyncio.gather(*(one(org) for org in sorted(orgs)))

    async def _lists(self, groups: dict[tuple[str, str], list[PipeNeed]]) -> None:
        """Probe the pipe list with the first service, then read the others' all at once."""
        first, *rest = groups
        await self._list(first, groups[first], probing=True)
        if self.live.capabilities.pipes_list is False:
            # No list endpoint: every service's pipes are read one GET each, all from one queue.
            await asyncio.gather(*(self._get(k, n) for k in groups for n in groups[k]))
            return
        await asyncio.gather(*(self._list(key, groups[key]) for key in rest))

    async def _list(
        self, key: tuple[str, str], members: list[PipeNeed], *, probing: bool = False
    ) -> None:
        """Read one service's list undecoded; on 404/405 (and no list seen yet) its pipes are
        read one GET each (by the caller when ``probing``)."""
        try:
            decode = await reads.list_pipes_undecoded(self.client, *key)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            if not isinstance(exc, Unsupported) or self.live.capabilities.pipes_list:
                self.live.pipe_lists[key] = PipeList(error=str(exc))
                return
            if self.live.capabilities.pipes_list is None:
                self.live.can(pipes_list=False)
                self.live.notes.append(NO_LIST)
            if not probing:
                await asyncio.gather(*(self._get(key, need) for need in members))
            return
        self.live.can(pipes_list=True)
        self.progress(1)
        self.live.pipe_lists[key] = PipeList(decode=decode)

    async def _get(self, key: tuple[str, str], need: PipeNeed) -> None:
        """Read one pipe by the id it is known by (none: the planner says it cannot be made)."""
        pipe_id = need.pipe_id(key[1])
        if not pipe_id:
            return
        ids = PipeIds(key[0], key[1], pipe_id)
        name = need.key.partition("/")[2]
        try:
            self.live.pipes_read[ids.path] = await reads.get_pipe(self.client, ids, name=name)
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            self.live.pipes_read[ids.path] = str(exc)
            return
        self.progress(1)

    async def _endpoint_statuses(self, groups: dict[tuple[str, str], list[PipeNeed]]) -> None:
        """Read the status of each endpoint a pipe with a live candidate names, once."""
        wanted: set[tuple[str, str, str]] = set()
        for (org, service), members in groups.items():
            naming = [n for n in members if n.endpoint_ids]
            if not naming:
                continue
            present = self._present(org, service, naming)
            for need in naming:
                if need.key in present:
                    wanted.update((org, service, e) for e in need.endpoint_ids)
        # Endpoints listed for endpoint manifests of the same plan are not read again.
        for found in self.live.endpoints.values():
            for endpoint in found.listed:
                key = (found.organization_id, found.service_id, str(endpoint.get("id")))
                self.live.endpoint_status[key] = str(endpoint.get("status"))

        async def check(key: tuple[str, str, str]) -> None:
            try:
                endpoint = await reads.get_endpoint(self.client, *key)
            except NotFound:
                self.live.endpoint_status[key] = None
                return
            except AuthenticationFailed:  # the run stops: never one resource's error
                raise
            except ApiError as exc:
                self.live.endpoint_status[key] = f"unknown ({exc})"
                return
            self.progress(1)
            self.live.endpoint_status[key] = str(endpoint.get("status"))

        await asyncio.gather(
            *(check(key) for key in sorted(wanted) if key not in self.live.endpoint_status)
        )

    def _present(self, org: str, service: str, naming: list[PipeNeed]) -> set[str]:
        """Return the keys of ``naming`` that may be bound to a live pipe (by id or by name)."""
        listed = self.live.pipe_lists.get((org, service))
        if listed is None:
            read = self.live.pipes_read
            paths = {n.key: PipeIds(org, service, n.pipe_id(service)).path for n in naming}
            return {key for key, path in paths.items() if isinstance(read.get(path), dict)}
        if listed.decode is None:
            return set()
        try:
            pipes = listed.decode()
        except AuthenticationFailed:
            raise
        except ApiError:  # a malformed list: its pipes are planned as errors, none bound
            return set()
        ids = {str(p.get("id")) for p in pipes}
        names = {str(p.get("name")) for p in pipes}
        return {n.key for n in naming if n.pipe_id(service) in ids or n.name in names}
