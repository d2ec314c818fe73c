"""``discover``: complete a pipe manifest with the columns the service infers from samples.

A manifest that states a pipe's source (and its destination database and table) but not
``destination.columns`` nor ``fieldMappings`` is sent to the service's schema discovery, which
reads sample messages of the source and answers the fields they carry with inferred types.
Each field becomes a destination column of that type (``Nullable(…)`` when a sample lacks it
or holds null, for a type that can be nullable) and a field mapping of the same name. The
manifest is edited as a round-trip YAML document, so its comments, order and modeline stay;
the text returned is in the canonical style ``fmt`` keeps.

Secret references are resolved as for ``plan`` (the request carries them; nothing printed
does). Only kafka and kinesis sources can be discovered: another kind, or a manifest that
already states columns or mappings, is an error naming its place, before any request.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from reconciler.client import reads
from reconciler.client.api import Client
from reconciler.inventory.reads import resolve_service
from reconciler.load.fmt import API_VERSION, canonical_yaml
from reconciler.load.manifests import load_resources
from reconciler.model.errors import Location, ManifestError, ManifestErrors
from reconciler.model.fields import (
    KAFKA_CREDENTIAL_SHAPES,
    KAFKA_DEFAULT_AUTHENTICATION,
    SOURCE_KINDS,
)
from reconciler.model.json import as_items, as_mapping
from reconciler.model.resources import Resource
from reconciler.model.secrets import resolve_pipe_secrets

__all__ = ["Draft", "discover_file", "draft_manifest"]


# The source kinds the service's schema discovery reads (its request takes these alone).
DISCOVERABLE: tuple[str, ...] = ("kafka", "kinesis")
# Types a column cannot wrap in Nullable(…): an optional field of these keeps its type.
_NOT_NULLABLE = ("Array(", "Map(", "Tuple(", "JSON", "Nullable(")


@dataclass(frozen=True)
class DiscoveredPipe:
    """One pipe manifest completed: its name and the columns (name, type) it was given."""

    name: str
    columns: tuple[tuple[str, str], ...]
    sample: str | None


@dataclass(frozen=True)
class Discovery:
    """The completed file: its new text and each pipe completed in it."""

    path: Path
    text: str
    pipes: tuple[DiscoveredPipe, ...]


def column_type(field: Mapping[str, object]) -> str:
    """The destination column type of a discovered field (optional → ``Nullable`` if it can)."""
    kind = str(field.get("type") or "String")
    if field.get("optional") and not kind.startswith(_NOT_NULLABLE):
        return f"Nullable({kind})"
    return kind


async def discover_file(client: Client, default_org: str | None, path: Path) -> Discovery:
    """Complete every Pipe manifest of the file at ``path`` with discovered columns/mappings."""
    resources = [
        r
        for r in load_resources([path], default_organization=default_org, positions=True)
        if r.kind == "Pipe"
    ]
    if not resources:
        raise ManifestErrors(
            [ManifestError(_first_line(path), "kind", "no Pipe manifest to complete")]
        )
    errors = [e for r in resources for e in _refusals(r)]
    if errors:
        raise ManifestErrors(errors)
    found = [await _discover(client, r) for r in resources]
    yaml = canonical_yaml()
    original = path.read_text(encoding="utf-8")
    docs: list[Any] = list(yaml.load_all(original))
    for resource, (fields, _) in zip(resources, found, strict=True):
        _complete(docs[resource.index]["spec"], fields)
    out = io.StringIO()
    if len(docs) == 1:
        yaml.dump(docs[0], out)
    else:
        yaml.explicit_start = original.lstrip().startswith("---")
        yaml.dump_all(docs, out)
    pipes = tuple(
        DiscoveredPipe(r.name, tuple((str(f["name"]), column_type(f)) for f in fields), sample)
        for r, (fields, sample) in zip(resources, found, strict=True)
    )
    return Discovery(path, out.getvalue(), pipes)


def _first_line(path: Path) -> Location:
    return Location(str(path), 1, 1)


def _refusals(resource: Resource) -> list[ManifestError]:
    spec = resource.spec
    source = as_mapping(spec.get("source"))
    kind = next((k for k in SOURCE_KINDS if k in source), None)
    problems: list[ManifestError] = []
    if kind not in DISCOVERABLE:
        problems.append(
            ManifestError(
                resource.locate_spec("source", kind) if kind else resource.locate_spec(),
                f"spec.source.{kind}" if kind else "spec.source",
                f"schema discovery reads {' and '.join(DISCOVERABLE)} sources only"
                + (f", not {kind}" if kind else ""),
            )
        )
    problems += _credential_refusals(resource, source)
    stated = [
        ("destination", "columns") if "columns" in as_mapping(spec.get("destination")) else None,
        ("fieldMappings",) if "fieldMappings" in spec else None,
    ]
    for at in (a for a in stated if a is not None):
        problems.append(
            ManifestError(
                resource.locate_spec(*at),
                "spec." + ".".join(at),
                "already stated: discover completes a manifest without "
                "destination.columns and fieldMappings (remove them to discover again)",
            )
        )
    return problems


def _credential_refusals(resource: Resource, source: Mapping[str, Any]) -> list[ManifestError]:
    """Kafka credentials of another shape than the authentication takes (the service refuses
    them, as it does in a create)."""
    kafka = as_mapping(source.get("kafka"))
    credentials = kafka.get("credentials")
    if not isinstance(credentials, Mapping):
        return []
    method = str(kafka.get("authentication") or KAFKA_DEFAULT_AUTHENTICATION)
    shapes = KAFKA_CREDENTIAL_SHAPES.get(method, ())
    if frozenset(str(k) for k in credentials) in shapes:
        return []
    takes = " or ".join("{" + ", ".join(sorted(s)) + "}" for s in shapes) or "no credentials"
    return [
        ManifestError(
            resource.locate_spec("source", "kafka", "credentials"),
            "spec.source.kafka.credentials",
            f"authentication {method} takes {takes}",
        )
    ]


async def _discover(client: Client, resource: Resource) -> tuple[list[dict[str, Any]], str | None]:
    spec = resolve_pipe_secrets(resource)
    org = str(spec["organizationId"])
    service = str(spec.get("serviceId") or spec.get("service"))
    service_id = str((await resolve_service(client, org, service))["id"])
    source = {
        k: v for k, v in as_mapping(spec["source"]).items() if k in DISCOVERABLE and v is not None
    }
    answer = await reads.discover_schema(
        client, org, service_id, source, resource=f"schema discovery of pipe {resource.name}"
    )
    fields = [as_mapping(f) for f in as_items(answer.get("fields"))]
    named = [dict(f) for f in fields if isinstance(f.get("name"), str) and f.get("name")]
    if not named:
        raise ManifestErrors(
            [
                ManifestError(
                    resource.locate_spec("source"),
                    "spec.source",
                    "schema discovery found no fields in the source's samples "
                    "(is the topic or stream empty?)",
                )
            ]
        )
    sample = as_mapping(answer.get("meta")).get("sample")
    return named, str(sample) if sample is not None else None


def _complete(spec: CommentedMap, fields: list[dict[str, Any]]) -> None:
    """Add ``destination.columns`` and ``fieldMappings`` to a round-trip spec, in place."""
    destination = spec.get("destination")
    if destination is None:
        destination = CommentedMap()
        spec["destination"] = destination
    columns = CommentedSeq()
    mappings = CommentedSeq()
    for field in fields:
        column = CommentedMap([("name", field["name"]), ("type", column_type(field))])
        column.fa.set_flow_style()
        columns.append(column)
        mapping = CommentedMap(
            [("sourceField", field["name"]), ("destinationField", field["name"])]
        )
        mapping.fa.set_flow_style()
        mappings.append(mapping)
    destination["columns"] = columns
    spec["fieldMappings"] = mappings


@dataclass(frozen=True)
class Draft:
    """A source given by flags instead of a manifest: what ``draft_manifest`` writes."""

    name: str
    service: str
    organization: str | None
    kind: str  # one of DISCOVERABLE
    source: dict[str, object]
    database: str | None = None
    table: str | None = None


def draft_manifest(draft: Draft) -> str:
    """Return the text of a pipe manifest of ``draft`` (to be completed by ``discover_file``)."""
    spec = CommentedMap()
    if draft.organization:
        spec["organizationId"] = draft.organization
    spec["service"] = draft.service
    spec["name"] = draft.name
    spec["source"] = {draft.kind: dict(draft.source)}
    destination = {k: v for k, v in (("database", draft.database), ("table", draft.table)) if v}
    if destination:
        spec["destination"] = {**destination, "managedTable": True}
    doc = CommentedMap(
        [
            ("apiVersion", API_VERSION),
            ("kind", "Pipe"),
            ("metadata", {"name": draft.name}),
            ("spec", spec),
        ]
    )
    out = io.StringIO()
    canonical_yaml().dump(doc, out)
    return out.getvalue()
