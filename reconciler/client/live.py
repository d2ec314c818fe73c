"""Fetching live state with as few requests as possible.

Request count is the cost of a plan (the service allows 10 management requests per 10 s),
so the fetcher reads in bulk and only what the manifests need: the services list once per
organization and only when a pipe names its service; pipes through one list call per service
when the server has it (probing once, then falling back to one GET per pipe on 404/405);
the organization through its GET when available; dashboards through their list; each reverse
private endpoint once however many pipes name it. All reads run concurrently under the
client's budget and concurrency cap, through the one read layer (``reads``). Which live pipe a
manifest without ``pipeId`` is (recorded, adopted by name, or new) is decided by
``binding.PipeBinder`` as each service's list is settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.client.endpointreads import ServiceReader
from reconciler.client.livestate import Capabilities, LiveState, Observed
from reconciler.client.paths import organization_path
from reconciler.client.pipereads import PipeReader
from reconciler.model.errors import ApiError, AuthenticationFailed, Unsupported
from reconciler.model.identity import Identities
from reconciler.model.json import JsonMapping
from reconciler.model.resources import Resource

__all__ = ["NO_IDENTITIES", "Capabilities", "Fetcher", "LiveState", "Observed"]

NO_IDENTITIES = Identities({}, {})


class Fetcher:
    """Reads the live objects a set of desired resources needs.

    ``on_pipe`` is called with each pipe as soon as everything about it is known (its live
    object or error, and its endpoints' statuses): the caller can plan it then, while other
    requests are still in flight, and drop its entry from ``live.pipes``.
    """

    def __init__(
        self,
        client: Client,
        *,
        organization_fallback: Callable[[str], JsonMapping | None] | None = None,
        progress: Callable[[int], None] | None = None,
        on_pipe: Callable[[Resource], None] | None = None,
        identities: Identities = NO_IDENTITIES,
    ) -> None:
        self.client = client
        self.identities = identities
        self.organization_fallback = organization_fallback
        self.progress = progress or (lambda n: None)
        self.on_pipe = on_pipe or (lambda resource: None)
        self.live = LiveState()
        self.pipes = PipeReader(client, self.live, identities, self.progress, self.on_pipe)

    async def fetch(
        self, resources: Sequence[Resource], *, need_dashboards: bool = False
    ) -> LiveState:
        """Fetch live state for ``resources`` (and the dashboard list when asked)."""
        pipes = [r for r in resources if r.kind == "Pipe"]
        orgs = [r for r in resources if r.kind == "Organization"]
        dashboards = [r for r in resources if r.kind == "Dashboard"]
        await asyncio.gather(
            self.pipes.fetch(pipes),
            self._fetch_organizations(orgs),
            self._fetch_dashboards() if (dashboards or need_dashboards) else _nothing(),
        )
        return self.live

    # -- organizations -----------------------------------------------------------------------

    async def fetch_endpoints(self, endpoints: Sequence[Resource]) -> LiveState:
        """Fetch the endpoint lists of ``endpoints``' services (read before the pipes that name
        them: a pipe is planned with their ids)."""
        await ServiceReader(self.client, self.live, self.progress).endpoints(endpoints)
        return self.live

    async def fetch_cdc(self, manifests: Sequence[Resource]) -> LiveState:
        """Fetch the CDC scaling of the services ``manifests`` name."""
        await ServiceReader(self.client, self.live, self.progress).cdc(manifests)
        return self.live

    async def _fetch_organizations(self, orgs: Sequence[Resource]) -> None:
        async def one(resource: Resource) -> None:
            org = str(resource.spec.get("organizationId"))
            path = organization_path(org)
            if self.live.capabilities.organization_get is not False:
                try:
                    live = await reads.get_organization(self.client, org, name=resource.name)
                except Unsupported:
                    self.live.capabilities.organization_get = False
                except AuthenticationFailed:  # the run stops: never one resource's error
                    raise
                except ApiError as exc:
                    self.live.organizations[resource.key] = Observed(error=str(exc), path=path)
                    return
                else:
                    self.live.capabilities.organization_get = True
                    self.progress(1)
                    self.live.organizations[resource.key] = Observed(live=live, path=path)
                    return
            recorded = (
                self.organization_fallback(resource.key) if self.organization_fallback else None
            )
            note = (
                "the server cannot read an organization: compared with the values recorded at the last apply"
                if recorded is not None
                else "the server cannot read an organization and nothing is recorded yet: apply reads it through its first PATCH and computes the private endpoint changes from the answer"
            )
            self.live.organizations[resource.key] = Observed(
                live=recorded or {}, path=path, note=note, unknown=recorded is None
            )

        await asyncio.gather(*(one(r) for r in orgs))

    # -- dashboards --------------------------------------------------------------------------

    async def _fetch_dashboards(self) -> None:
        if not self.client.config.dashboards_token:
            self.live.dashboards_error = (
                "no dashboards token: set RECONCILE_DASHBOARDS_TOKEN or pass --dashboards-token"
            )
            return
        try:
            listed = await reads.list_dashboards(self.client)
        except Unsupported:
            self.live.capabilities.dashboards_list = False
            self.live.notes.append(
                "the server has no dashboard list: dashboards are tracked through the state file"
            )
            return
        except AuthenticationFailed:  # the run stops: never one resource's error
            raise
        except ApiError as exc:
            # Reported on each dashboard; pipes and organizations are still planned.
            self.live.dashboards_error = str(exc)
            return
        self.progress(1)
        self.live.capabilities.dashboards_list = True
        self.live.dashboards = listed


async def _nothing() -> None:
    return None
