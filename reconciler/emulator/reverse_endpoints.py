"""Reverse private endpoints: the create and update bodies, their lifecycle and deletion rule.

An endpoint's ``type`` decides which connection fields it takes — and needs:
VPC_ENDPOINT_SERVICE a ``vpcEndpointServiceName``; VPC_RESOURCE a
``vpcResourceConfigurationId`` and a ``vpcResourceShareArn``; MSK_MULTI_VPC an
``mskClusterArn`` and an ``mskAuthentication``; GCP_PSC_SERVICE_ATTACHMENT a
``gcpServiceAttachment``. The fields of the other types are refused when given a value, and
absent from answers. A new endpoint is Provisioning, with no ``endpointId`` or DNS names yet,
and Ready ``--transition-ms`` later (settled when read, like pipe states; the pending moves live
in the store's ``endpointTransitions``). Only ``customPrivateDnsMappings`` can change afterwards
(``privateDnsNames`` follows them). An endpoint a pipe names in ``reversePrivateEndpointIds``
cannot be deleted (400) until no pipe does.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from reconciler.emulator.protocol import ApiError, iso_ms, parse_iso
from reconciler.emulator.validation import Nullable, array, management, obj, string

__all__: list[str] = []


TYPE_FIELDS: dict[str, tuple[str, ...]] = {
    "VPC_ENDPOINT_SERVICE": ("vpcEndpointServiceName",),
    "VPC_RESOURCE": ("vpcResourceConfigurationId", "vpcResourceShareArn"),
    "MSK_MULTI_VPC": ("mskClusterArn", "mskAuthentication"),
    "GCP_PSC_SERVICE_ATTACHMENT": ("gcpServiceAttachment",),
}
_CONNECTION_FIELDS = tuple(f for fields in TYPE_FIELDS.values() for f in fields)
_DNS_MAPPINGS = array(obj({"privateDnsName": string(1)}, required=("privateDnsName",)))

CREATE = obj(
    {
        "description": string(0, 255),
        "type": string(enum=tuple(TYPE_FIELDS)),
        "vpcEndpointServiceName": Nullable(string(1), None),
        "vpcResourceConfigurationId": Nullable(string(1), None),
        "vpcResourceShareArn": Nullable(string(1), None),
        "mskClusterArn": Nullable(string(1), None),
        "mskAuthentication": Nullable(string(enum=("SASL_IAM", "SASL_SCRAM")), None),
        "gcpServiceAttachment": Nullable(string(1), None),
        "customPrivateDnsMappings": _DNS_MAPPINGS,
    },
    required=("type",),
)
UPDATE = obj({"customPrivateDnsMappings": _DNS_MAPPINGS})


def validate_create(body: Any) -> dict[str, Any]:
    """The create body with only its type's connection fields, or a 400 naming the field."""
    result = management(CREATE, body)
    kind = result["type"]
    for name in _CONNECTION_FIELDS:
        value = result.get(name)
        if name in TYPE_FIELDS[kind] and value is None:
            raise ApiError(400, f"{name} is required for type {kind}")
        if name not in TYPE_FIELDS[kind] and value is not None:
            raise ApiError(400, f"{name} is not taken by type {kind}")
    return {k: v for k, v in result.items() if v is not None}


def validate_update(body: Any) -> dict[str, Any]:
    """The update body (only ``customPrivateDnsMappings`` can change), or a 400."""
    if isinstance(body, dict):
        for name in body:
            if name in CREATE.schema["properties"] and name != "customPrivateDnsMappings":
                raise ApiError(
                    400, f"{name} cannot be changed: only customPrivateDnsMappings can be updated"
                )
    return management(UPDATE, body)


def _dns_names(mappings: list[dict[str, Any]]) -> list[str]:
    return [m["privateDnsName"] for m in mappings]


def create(
    data: dict[str, Any], service_id: str, body: dict[str, Any], ready_at: datetime
) -> dict[str, Any]:
    """Store a new Provisioning endpoint that becomes Ready at ``ready_at``."""
    endpoint_id = str(uuid.uuid4())
    mappings = body.get("customPrivateDnsMappings", [])
    record = {
        "id": endpoint_id,
        "serviceId": service_id,
        "description": body.get("description", ""),
        "type": body["type"],
        **{name: body[name] for name in TYPE_FIELDS[body["type"]]},
        "customPrivateDnsMappings": mappings,
        "privateDnsNames": _dns_names(mappings),
        "endpointId": "",
        "dnsNames": [],
        "status": "Provisioning",
    }
    data["reversePrivateEndpoints"][endpoint_id] = record
    data.setdefault("endpointTransitions", {})[endpoint_id] = {"at": iso_ms(ready_at)}
    return record


def settle(data: dict[str, Any], endpoint: dict[str, Any], now: datetime) -> bool:
    """Make a Provisioning endpoint Ready when its time has come; True when it changed."""
    pending = data.get("endpointTransitions", {}).get(endpoint["id"])
    if pending is None or parse_iso(pending["at"]) > now:
        return False
    del data["endpointTransitions"][endpoint["id"]]
    prefix = "psc" if endpoint["type"] == "GCP_PSC_SERVICE_ATTACHMENT" else "vpce"
    name = f"{prefix}-{endpoint['id'].replace('-', '')[:17]}"
    endpoint.update(status="Ready", endpointId=name, dnsNames=[f"{name}.endpoints.example.com"])
    return True


def forget(data: dict[str, Any], endpoint_id: str) -> None:
    """Drop an endpoint's pending move (deleted, or its status forced by an admin)."""
    data.get("endpointTransitions", {}).pop(endpoint_id, None)


def update(endpoint: dict[str, Any], body: dict[str, Any]) -> bool:
    """Apply a validated update; True when the endpoint changed."""
    if "customPrivateDnsMappings" not in body:
        return False
    mappings = body["customPrivateDnsMappings"]
    if mappings == endpoint.get("customPrivateDnsMappings"):
        return False
    endpoint["customPrivateDnsMappings"] = mappings
    endpoint["privateDnsNames"] = _dns_names(mappings)
    return True


def delete(data: dict[str, Any], endpoint: dict[str, Any]) -> None:
    """Delete the endpoint, or a 400 naming a pipe that still uses it."""
    for pipe in data["pipes"].values():
        kafka = pipe["source"].get("kafka") or {}
        if endpoint["id"] in kafka.get("reversePrivateEndpointIds", []):
            raise ApiError(
                400,
                f"Reverse private endpoint {endpoint['id']} is used by pipe {pipe['id']} "
                f"({pipe['name']}): remove it from the pipe's reversePrivateEndpointIds first",
            )
    del data["reversePrivateEndpoints"][endpoint["id"]]
    forget(data, endpoint["id"])


def later(now: datetime, transition_ms: int) -> datetime:
    """The moment a new endpoint becomes Ready."""
    return now + timedelta(milliseconds=transition_ms)
