"""The one place API paths are built.

Every path of both interfaces is spelled here — the fetcher, saved-plan checks, planners and
the read-only views call these builders instead of formatting URLs inline, so a path changes
in one place. Every id is inserted as exactly one percent-encoded segment (``segment``): a
valid uuid or server-assigned id is unchanged, and an id a user typed (``get endpoint ID``)
cannot climb out of its segment with ``/`` or ``..``. Query strings are encoded with
``urlencode``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlencode

__all__ = [
    "DASHBOARDS_PATH",
    "PipeIds",
    "cdc_scaling_path",
    "dashboard_path",
    "endpoint_path",
    "endpoints_path",
    "organization_path",
    "pipe_path",
    "pipes_path",
]


DASHBOARDS_PATH = "/api/v2/dashboards"


def segment(value: str) -> str:
    """Return ``value`` as one path segment: percent-encoded, and never ``.`` or ``..``."""
    encoded = quote(str(value), safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def organization_path(org_id: str) -> str:
    """Return an organization's path: ``/v1/organizations/{id}``."""
    return f"/v1/organizations/{segment(org_id)}"


def organization_of(path: str) -> str | None:
    """Return the organization id a management path addresses (``None`` for other paths)."""
    parts = path.split("?", 1)[0].split("/")
    if len(parts) > 3 and parts[1] == "v1" and parts[2] == "organizations" and parts[3]:
        return unquote(parts[3])
    return None


def services_path(org_id: str, filters: Sequence[str] = ()) -> str:
    """Return the services list of an organization (``filter`` values such as ``tag:Env=Prod``)."""
    query = f"?{urlencode([('filter', f) for f in filters])}" if filters else ""
    return f"{organization_path(org_id)}/services{query}"


def service_path(org_id: str, service_id: str) -> str:
    """Return one service's path."""
    return f"{organization_path(org_id)}/services/{segment(service_id)}"


def pipes_path(org_id: str, service_id: str) -> str:
    """Return the pipe list of a service."""
    return f"{service_path(org_id, service_id)}/pipes"


def schema_discovery_path(org_id: str, service_id: str) -> str:
    """Return a service's schema discovery (POST a source, get the fields its samples carry)."""
    return f"{pipes_path(org_id, service_id)}/schemaDiscovery"


def pipe_path(org_id: str, service_id: str, pipe_id: str) -> str:
    """Return one pipe's path."""
    return f"{pipes_path(org_id, service_id)}/{segment(pipe_id)}"


def pipe_state_path(org_id: str, service_id: str, pipe_id: str) -> str:
    """Return a pipe's state command path (``PATCH {"command": "start" | "stop" | "resync"}``)."""
    return f"{pipe_path(org_id, service_id, pipe_id)}/state"


def pipe_scaling_path(org_id: str, service_id: str, pipe_id: str) -> str:
    """Return a pipe's scaling path."""
    return f"{pipe_path(org_id, service_id, pipe_id)}/scaling"


def cdc_scaling_path(org_id: str, service_id: str) -> str:
    """Return the path of a service's CDC scaling."""
    return f"{service_path(org_id, service_id)}/pipesCdcScaling"


def endpoints_path(org_id: str, service_id: str) -> str:
    """Return the path of a service's reverse private endpoints."""
    return f"{service_path(org_id, service_id)}/pipesReversePrivateEndpoints"


def endpoint_path(org_id: str, service_id: str, endpoint_id: str) -> str:
    """Return one reverse private endpoint's path."""
    return f"{endpoints_path(org_id, service_id)}/{segment(endpoint_id)}"


def backups_path(org_id: str, service_id: str) -> str:
    """Return the backups list of a service."""
    return f"{service_path(org_id, service_id)}/backups"


def dashboard_path(dashboard_id: str) -> str:
    """Return one dashboard's path."""
    return f"{DASHBOARDS_PATH}/{segment(dashboard_id)}"


@dataclass(frozen=True)
class PipeIds:
    """Where a pipe lives: its organization, service and own id."""

    organization_id: str
    service_id: str
    pipe_id: str

    @classmethod
    def from_target(cls, target: Mapping[str, str]) -> PipeIds:
        """Return the ids of a plan action's ``target`` mapping."""
        return cls(target["organizationId"], target["serviceId"], target["pipeId"])

    @property
    def path(self) -> str:
        """Return the pipe's API path."""
        return pipe_path(self.organization_id, self.service_id, self.pipe_id)

    @property
    def state_path(self) -> str:
        """Return the pipe's state command path."""
        return pipe_state_path(self.organization_id, self.service_id, self.pipe_id)

    @property
    def scaling_path(self) -> str:
        """Return the pipe's scaling path."""
        return pipe_scaling_path(self.organization_id, self.service_id, self.pipe_id)

    def as_dict(self) -> dict[str, str]:
        """Return the ids as the plan's ``target`` mapping."""
        return {
            "organizationId": self.organization_id,
            "serviceId": self.service_id,
            "pipeId": self.pipe_id,
        }
