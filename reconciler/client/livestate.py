"""What one refresh read: the ``LiveSnapshot`` a plan is computed from, and what it was asked for.

The refresh (``live.refresh``) reads what the manifests need in bulk and hands back an
immutable ``LiveSnapshot``: the services lists, each service's pipe list (still undecoded:
a list is decoded when it is planned, so that thousands of parsed pipes are never alive at
once), the pipes read one GET each where the server has no list, endpoint statuses, the
organization, dashboard, endpoint and CDC reads, and the objects ``--prune`` would delete.
Which live object a manifest is (binding) is not decided here: the planner decides it from
the snapshot (``reconciler.plan``). ``Wanted`` says what to read; ``PipeNeed`` one pipe's part.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from reconciler.model.json import JsonMapping, JsonObject
from reconciler.model.resources import Resource

__all__ = [
    "LiveSnapshot",
    "Observed",
    "PipeList",
    "PipeNeed",
    "RetiredNeed",
    "ServiceCdc",
    "ServiceEndpoints",
    "Wanted",
]


@dataclass(frozen=True)
class Observed:
    """What was found for one desired resource."""

    live: JsonMapping | None = None
    error: str | None = None
    path: str = ""
    endpoint_status: Mapping[str, str | None] = field(default_factory=dict)
    note: str | None = None
    unknown: bool = False


@dataclass(frozen=True)
class Capabilities:
    """Which optional endpoints (the real service's extensions) the server answered."""

    pipes_list: bool | None = None
    organization_get: bool | None = None
    dashboards_list: bool | None = None


@dataclass(frozen=True)
class ServiceEndpoints:
    """The reverse private endpoints of the service one endpoint manifest names (or why not)."""

    organization_id: str = ""
    service_id: str = ""
    listed: tuple[JsonObject, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class ServiceCdc:
    """The CDC scaling of the service a CdcScaling manifest names: ``live``, or ``absent``
    (the server's word that it has no database pipe yet), or ``error``."""

    organization_id: str = ""
    service_id: str = ""
    live: JsonObject | None = None
    absent: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class PipeList:
    """One service's pipe list as read: ``decode`` gives its pipes (raising the list's
    ``ApiError`` when the body is malformed), or ``error`` says why it was not read."""

    decode: Callable[[], list[JsonObject]] | None = None
    error: str | None = None


@dataclass(frozen=True)
class PipeNeed:
    """What the refresh reads for one pipe manifest: its service (by id or by name) and the
    id it is known by (pinned, or recorded for a service: ``pipe_id``)."""

    key: str
    name: str  # spec.name: a list holding a pipe of this name may bind it
    organization_id: str
    service_id: str | None
    service_name: str
    pinned: str = ""
    recorded: str = ""
    recorded_service: str | None = None
    endpoint_ids: tuple[str, ...] = ()

    def pipe_id(self, service: str) -> str:
        """Return the id this pipe is known by in ``service`` (empty: bound by name, or new)."""
        if self.pinned:
            return self.pinned
        if self.recorded and self.recorded_service in (None, service):
            return self.recorded
        return ""


@dataclass(frozen=True)
class RetiredNeed:
    """An object this tool created whose manifest is gone: read to see whether it exists."""

    kind: str
    name: str
    organization_id: str
    service_id: str
    id: str

    @property
    def key(self) -> str:
        """Return its state address (``Kind/name``)."""
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Wanted:
    """What one refresh reads."""

    pipes: tuple[PipeNeed, ...] = ()
    endpoints: tuple[Resource, ...] = ()
    cdc: tuple[Resource, ...] = ()
    organizations: tuple[Resource, ...] = ()
    dashboards: bool = False
    retired: tuple[RetiredNeed, ...] = ()


@dataclass(frozen=True)
class LiveSnapshot:
    """Everything one refresh read: the input of the pure planner, never changed after."""

    # By organization: its services list, or why it could not be read.
    services: Mapping[str, tuple[JsonObject, ...] | str] = field(default_factory=dict)
    # By (organization, service id).
    pipe_lists: Mapping[tuple[str, str], PipeList] = field(default_factory=dict)
    # By pipe path: the pipe read by its own GET (no list endpoint), or the error.
    pipes_read: Mapping[str, JsonObject | str] = field(default_factory=dict)
    # By (organization, service id, endpoint id): its status, None when it does not exist.
    endpoint_status: Mapping[tuple[str, str, str], str | None] = field(default_factory=dict)
    # By Organization manifest key (none for one the server cannot read).
    organizations: Mapping[str, Observed] = field(default_factory=dict)
    dashboards: tuple[JsonObject, ...] | None = None
    dashboards_error: str | None = None
    # By endpoint or CDC scaling manifest key.
    endpoints: Mapping[str, ServiceEndpoints] = field(default_factory=dict)
    cdc: Mapping[str, ServiceCdc] = field(default_factory=dict)
    # By ``Kind/name`` of each ``RetiredNeed``: the live object, None if gone, or the error.
    retired: Mapping[str, JsonObject | str | None] = field(default_factory=dict)
    capabilities: Capabilities = Capabilities()
    notes: tuple[str, ...] = ()
    # The organizations the key was refused (the first contact's finding).
    refused_organizations: frozenset[str] = frozenset()


@dataclass
class LiveState:
    """A snapshot being read (the readers fill it; ``snapshot`` freezes it)."""

    services: dict[str, list[JsonObject]] = field(default_factory=dict)
    services_errors: dict[str, str] = field(default_factory=dict)
    pipe_lists: dict[tuple[str, str], PipeList] = field(default_factory=dict)
    pipes_read: dict[str, JsonObject | str] = field(default_factory=dict)
    endpoint_status: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    organizations: dict[str, Observed] = field(default_factory=dict)
    dashboards: list[JsonObject] | None = None
    dashboards_error: str | None = None
    endpoints: dict[str, ServiceEndpoints] = field(default_factory=dict)
    cdc: dict[str, ServiceCdc] = field(default_factory=dict)
    retired: dict[str, JsonObject | str | None] = field(default_factory=dict)
    capabilities: Capabilities = Capabilities()
    notes: list[str] = field(default_factory=list)

    def can(self, **found: bool) -> None:
        """Record which optional endpoints the server answered."""
        self.capabilities = dataclasses.replace(self.capabilities, **found)

    def snapshot(self, refused: frozenset[str] = frozenset()) -> LiveSnapshot:
        """Return what was read as an immutable ``LiveSnapshot``."""
        services: dict[str, tuple[JsonObject, ...] | str] = dict(self.services_errors)
        services.update({org: tuple(listed) for org, listed in self.services.items()})
        return LiveSnapshot(
            services=services,
            pipe_lists=dict(self.pipe_lists),
            pipes_read=dict(self.pipes_read),
            endpoint_status=dict(self.endpoint_status),
            organizations=dict(self.organizations),
            dashboards=tuple(self.dashboards) if self.dashboards is not None else None,
            dashboards_error=self.dashboards_error,
            endpoints=dict(self.endpoints),
            cdc=dict(self.cdc),
            retired=dict(self.retired),
            capabilities=self.capabilities,
            notes=tuple(self.notes),
            refused_organizations=refused,
        )
