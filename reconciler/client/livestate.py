"""What fetching found for one plan: each resource's live object or error, and which optional
endpoints the server answered (filled by ``live.Fetcher`` and ``pipereads.PipeReader``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.client.paths import PipeIds
from reconciler.model.identity import Binding
from reconciler.model.json import JsonMapping, JsonObject


@dataclass(frozen=True)
class Observed:
    """What fetching found for one desired resource."""

    live: JsonMapping | None = None
    error: str | None = None
    path: str = ""
    endpoint_status: Mapping[str, str | None] = field(default_factory=dict)
    note: str | None = None
    unknown: bool = False


@dataclass
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


@dataclass
class LiveState:
    """Everything fetched for one plan."""

    pipes: dict[str, Observed] = field(default_factory=dict)
    pipe_ids: dict[str, PipeIds] = field(default_factory=dict)
    # How each pipe manifest was bound (``identity.bind``); a NEW one has no pipe id yet.
    bindings: dict[str, Binding] = field(default_factory=dict)
    organizations: dict[str, Observed] = field(default_factory=dict)
    dashboards: list[JsonObject] | None = None
    dashboards_error: str | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    # Per endpoint manifest (``Kind/name``): its service's endpoints, one list read per service.
    endpoints: dict[str, ServiceEndpoints] = field(default_factory=dict)
    cdc: dict[str, ServiceCdc] = field(default_factory=dict)
    # The services lists read so far, by organization (read once per plan, whoever needs it).
    services: dict[str, list[JsonObject]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
