"""Reverse private endpoints as the manifests describe them: their type and its fields.

An endpoint's ``type`` decides which connection fields it takes, and needs: the service
refuses a field of another type and cannot connect without one of its own, so a manifest is
checked against ``TYPE_FIELDS`` before anything is sent. Only ``customPrivateDnsMappings``
can change on a live endpoint (``WRITABLE``); every other field is fixed when it is created.
"""

from __future__ import annotations

from collections.abc import Iterator

from reconciler.model.json import JsonMapping
from reconciler.model.resources import JsonPath

__all__ = [
    "CREATE_TIME",
    "ENDPOINT",
    "FAILED_STATUSES",
    "READY",
    "WRITABLE",
    "endpoint_type_errors",
]


ENDPOINT = "ReversePrivateEndpoint"

TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    "VPC_ENDPOINT_SERVICE": ("vpcEndpointServiceName",),
    "VPC_RESOURCE": ("vpcResourceConfigurationId", "vpcResourceShareArn"),
    "MSK_MULTI_VPC": ("mskClusterArn", "mskAuthentication"),
    "GCP_PSC_SERVICE_ATTACHMENT": ("gcpServiceAttachment",),
}
CONNECTION_FIELDS: tuple[str, ...] = tuple(f for fs in TYPE_FIELDS.values() for f in fs)
WRITABLE = "customPrivateDnsMappings"
# The fields a create sends and a live endpoint is compared on, in the order plans show them.
CREATE_TIME: tuple[str, ...] = ("description", "type", *CONNECTION_FIELDS)
# Statuses an endpoint never leaves for Ready by itself.
FAILED_STATUSES = frozenset({"Failed", "Rejected", "Expired"})
READY = "Ready"


def endpoint_type_errors(spec: JsonMapping) -> Iterator[tuple[JsonPath, str]]:
    """Yield (spec path, message) for each connection field the endpoint's type lacks or refuses."""
    kind = spec.get("type")
    needs = TYPE_FIELDS.get(str(kind), ())
    for name in needs:
        if name not in spec:
            yield ("type",), f"type {kind} needs spec.{name}"
    for name in CONNECTION_FIELDS:
        if name in spec and name not in needs:
            wanted = ", ".join(needs) or "none"
            yield (name,), f"{name} is not taken by type {kind} (it takes: {wanted})"
