"""Live objects into manifest documents: what ``reconcile export`` writes, as data.

An exported manifest states exactly what the API would let the tool change (every writable
field the live object has, filtered through the manifest schema so it always validates; which
fields are writable, create-time or secret is the schema's field catalogue), so
planning it against the same live state gives **no changes**. Write-only fields (credentials,
access keys, connection strings) are never returned by the API: they are left out, and the
document carries the hints (``secrethints``) that show where and how to add them as secret
references. Read-only fields are kept as expectations only when asked (``with_expectations``).
Dashboards lose their service-assigned ids. A live name becomes a valid ``metadata.name``,
made unique among its kind's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.inventory.reads import source_kind
from reconciler.inventory.secrethints import has_secrets, secret_hints
from reconciler.load.schema import KIND_FILES, load_schemas
from reconciler.model.fields import (
    PIPE_IDENTITY,
    is_create_time_path,
    is_secret_path,
    is_validate_only,
    is_writable_pipe_path,
)
from reconciler.model.json import JsonLike, JsonMapping, JsonObject, as_mapping
from reconciler.model.resources import JsonPath
from reconciler.model.schematree import resolve

__all__: list[str] = []


_MISSING = object()
_FOLDER = {
    "Pipe": "pipes",
    "Organization": "",
    "Dashboard": "dashboards",
    "ReversePrivateEndpoint": "endpoints",
    "CdcScaling": "cdc",
}
# The fields of a reverse private endpoint a manifest states: its description, its type, the
# connection fields of that type, and the DNS mappings (status, DNS names and the cloud's
# endpoint id are read-only).
_ENDPOINT_FIELDS = (
    "description",
    "type",
    "vpcEndpointServiceName",
    "vpcResourceConfigurationId",
    "vpcResourceShareArn",
    "mskClusterArn",
    "mskAuthentication",
    "gcpServiceAttachment",
    "customPrivateDnsMappings",
)


@dataclass
class Document:
    """One manifest to write: kind, ``metadata.name``, spec and the comments to attach."""

    kind: str
    name: str
    spec: JsonObject
    secret_hints: list[str] = field(default_factory=list)
    source_kind: str | None = None

    def relative_path(self) -> Path:
        """Return where the manifest goes inside the export directory."""
        if self.kind == "Organization":
            return Path("organization.yaml")
        return Path(_FOLDER[self.kind]) / f"{self.name}.yaml"


# -- names ----------------------------------------------------------------------------------


def slugify(text: str, fallback: str = "resource") -> str:
    """Return a valid ``metadata.name`` for a live name (lower-case, ``-`` separated)."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower())
    slug = re.sub(r"-{2,}", "-", slug).strip("-._")[:253].strip("-._")
    return slug or fallback


def unique_names(names: Sequence[str], fallback: str) -> list[str]:
    """Slugify every name, suffixing ``-2``, ``-3`` … where two would clash."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        base = slugify(name, fallback)
        candidate, n = base, 1
        while candidate in seen:
            n += 1
            candidate = f"{base[: 250 - len(str(n))]}-{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def env_prefix(name: str) -> str:
    """Return an environment-variable prefix for a resource: ``events-archive`` → ``EVENTS_ARCHIVE``."""
    prefix = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()
    return prefix if prefix and not prefix[0].isdigit() else f"PIPE_{prefix}".rstrip("_")


# -- schema-guided filtering ----------------------------------------------------------------


def _fit(
    value: JsonLike,
    node: JsonMapping,
    doc: str,
    path: JsonPath,
    keep: Callable[[JsonPath], bool],
) -> Any:
    """Keep the parts of ``value`` the schema ``node`` allows and ``keep(path)`` accepts."""
    node, doc = resolve(node, doc)
    if value is None:
        return _MISSING
    props = node.get("properties")
    if isinstance(value, Mapping) and isinstance(props, Mapping):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            if key not in props or is_secret_path((*path, key)):
                continue
            kept = _fit(sub, as_mapping(props[key]), doc, (*path, key), keep)
            if kept is not _MISSING:
                out[str(key)] = kept
        return out if out or not value else _MISSING
    if not keep(path):
        return _MISSING
    items = node.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        fitted = [_fit(v, items, doc, (), lambda p: True) for v in value]
        return [v for v in fitted if v is not _MISSING]
    return value


# -- live objects → specs -------------------------------------------------------------------


def pipe_document(
    pipe: JsonMapping,
    org: str,
    service_id: str,
    name: str,
    *,
    with_expectations: bool,
    by_name: str | None = None,
    service_name: str | None = None,
) -> Document:
    """Build the Pipe manifest of a live pipe: identity plus writable (and expected) fields.

    With ``by_name`` (the service's name) the manifest is bound by name: no pipeId nor
    organizationId, ``service: NAME``, and the create-time fields a create needs. Otherwise,
    with ``service_name`` (the service was chosen by its name) the manifest says
    ``service: NAME``, as a person writes it, beside its pipeId; without it ``serviceId``.
    """
    schema = load_schemas()[KIND_FILES["Pipe"]]["$defs"]["spec"]

    def keep(path: JsonPath) -> bool:
        if is_validate_only(path):
            return False
        if by_name is not None and is_create_time_path(path):
            return True
        return with_expectations or is_writable_pipe_path(path)

    body = {k: v for k, v in pipe.items() if k not in PIPE_IDENTITY and k != "id"}
    fitted = _fit(body, schema, KIND_FILES["Pipe"], (), keep)
    spec: JsonObject
    if by_name is not None:
        spec = {"service": by_name, "name": str(pipe.get("name") or name)}
    else:
        spec = {"organizationId": org}
        spec.update({"service": service_name} if service_name else {"serviceId": service_id})
        spec["pipeId"] = str(pipe["id"])
    spec.update(fitted if isinstance(fitted, dict) else {})
    if spec.get("fieldMappings") == []:
        # A pipe created without mappings maps fields by column name; the service shows that
        # as an empty list, which a manifest cannot state (it would map no column).
        del spec["fieldMappings"]
    kind = source_kind(pipe)
    hints: list[str] = []
    if has_secrets(kind):
        given = spec.get("source")
        source: JsonObject = dict(given) if isinstance(given, dict) else {}
        source.setdefault(kind, {})
        spec["source"] = {kind: source[kind], **{k: v for k, v in source.items() if k != kind}}
        prefix = env_prefix(str(pipe.get("name") or name))
        live = as_mapping(as_mapping(pipe.get("source")).get(kind))
        hints = secret_hints(kind, live, prefix, slugify(prefix), create_time=by_name is not None)
        order = [
            "organizationId",
            "service",
            "serviceId",
            "pipeId",
            "name",
            "state",
            "scaling",
            "source",
        ]
        spec = {k: spec[k] for k in order if k in spec} | {
            k: v for k, v in spec.items() if k not in order
        }
    return Document("Pipe", name, spec, hints, kind if has_secrets(kind) else None)


def organization_document(org: JsonMapping, name: str) -> Document:
    """Build the Organization manifest: id, name and the full private endpoint list."""
    schema = load_schemas()[KIND_FILES["Organization"]]["properties"]["spec"]
    body = {k: v for k, v in org.items() if k in ("name", "privateEndpoints")}
    fitted = _fit(body, schema, KIND_FILES["Organization"], (), lambda p: True)
    spec: JsonObject = {"organizationId": str(org.get("id"))}
    spec.update(fitted if isinstance(fitted, dict) else {})
    return Document("Organization", name, spec)


def dashboard_document(dashboard: JsonMapping, name: str) -> Document:
    """Build the Dashboard manifest: name, tiles and tags, without service-assigned ids."""
    schema = load_schemas()[KIND_FILES["Dashboard"]]["properties"]["spec"]
    body = {k: v for k, v in dashboard.items() if k in ("name", "tiles", "tags")}
    fitted = _fit(body, schema, KIND_FILES["Dashboard"], (), lambda p: True)
    return Document("Dashboard", name, fitted if isinstance(fitted, dict) else {})


def endpoint_document(endpoint: JsonMapping, binding: JsonObject, name: str) -> Document:
    """Build the ReversePrivateEndpoint manifest: description, type and its fields, DNS mappings."""
    schema = load_schemas()[KIND_FILES["ReversePrivateEndpoint"]]["properties"]["spec"]
    body = {k: endpoint[k] for k in _ENDPOINT_FIELDS if endpoint.get(k) is not None}
    fitted = _fit(body, schema, KIND_FILES["ReversePrivateEndpoint"], (), lambda p: True)
    spec: JsonObject = dict(binding)
    spec.update(fitted if isinstance(fitted, dict) else {})
    if "customPrivateDnsMappings" in body and "customPrivateDnsMappings" not in spec:
        spec["customPrivateDnsMappings"] = []
    return Document("ReversePrivateEndpoint", name, spec)


def cdc_scaling_document(scaling: JsonObject, binding: JsonObject, name: str) -> Document:
    """Build the CdcScaling manifest: the service and its replicas' CPU and memory."""
    spec: JsonObject = dict(binding)
    for key in ("replicaCpuMillicores", "replicaMemoryGb"):
        if scaling.get(key) is not None:
            spec[key] = scaling[key]
    return Document("CdcScaling", name, spec)
