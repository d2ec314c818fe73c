"""Turn live objects into manifests: ``reconcile export``.

``collect`` reads what the options select and returns one ``documents.Document`` per live
object (``documents`` says what a manifest keeps of it); ``write_documents`` writes them. Files
carry the write-only fields' hints as YAML comments, start with the schema modeline for
editors when the schemas sit in the same project (never a path into this machine's install),
are never overwritten without ``force``, and are all checked before any is written.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reconciler.client import reads as client_reads
from reconciler.client.api import Client
from reconciler.inventory.documents import (
    Document,
    cdc_scaling_document,
    dashboard_document,
    endpoint_document,
    organization_document,
    pipe_document,
    slugify,
    unique_names,
)
from reconciler.inventory.reads import (
    find_pipe,
    get_dashboards,
    get_organization,
    list_services,
    pick_service,
    pipe_list,
    resolve_service,
)
from reconciler.load.schema import KIND_FILES, schema_dir
from reconciler.model.apierrors import BadRequest, Unsupported
from reconciler.model.errors import ConfigError
from reconciler.model.json import JsonMapping, JsonObject
from reconciler.model.resources import API_VERSION
from reconciler.state.local import find_project_root

__all__ = ["ExportOptions", "collect", "write_documents"]


@dataclass(frozen=True)
class ExportOptions:
    """What to export."""

    service: str | None = None
    pipe_ids: tuple[str, ...] = ()
    organization: bool = False
    dashboards: bool = False
    endpoints: bool = False
    cdc_scaling: bool = False
    with_expectations: bool = False
    # Pipes bound by name, not id: no pipeId nor organizationId, the service by name, and the
    # create-time fields, so the manifests can create the pipes in another organization.
    by_name: bool = False


# -- live objects → documents ---------------------------------------------------------------


def _service_binding(org: str, service_id: str, name: str | None, *, by_name: bool) -> JsonObject:
    """Return how a manifest names its service: by name alone, or organization plus service."""
    if by_name and name:
        return {"service": name}
    return {"organizationId": org, **({"service": name} if name else {"serviceId": service_id})}


async def _service_extras(
    client: Client, org: str, service: JsonMapping, chosen: str | None, options: ExportOptions
) -> list[Document]:
    """Return the endpoint and CDC capacity manifests of one service, as ``options`` asks."""
    service_id = str(service["id"])
    by_name = options.by_name
    binding = _service_binding(
        org, service_id, str(service.get("name")) if by_name else chosen, by_name=by_name
    )
    documents: list[Document] = []
    if options.endpoints:
        try:
            live = await client_reads.list_endpoints(client, org, service_id)
        except Unsupported as e:
            raise ConfigError(
                "the server cannot list reverse private endpoints of a service: "
                "export without --endpoints"
            ) from e
        names = unique_names([str(e.get("description") or e.get("id")) for e in live], "endpoint")
        documents += [endpoint_document(e, binding, n) for e, n in zip(live, names, strict=True)]
    if options.cdc_scaling:
        try:
            scaling = await client_reads.get_cdc_scaling(client, org, service_id)
        except (BadRequest, Unsupported):
            scaling = None  # no database pipe yet (or no CDC operations): nothing to state
        if scaling:
            slug = slugify(str(service.get("name") or service_id), "service")
            documents.append(cdc_scaling_document(scaling, binding, f"{slug}-cdc"))
    return documents


async def collect(client: Client, org: str, options: ExportOptions) -> list[Document]:
    """Read what ``options`` selects and return the manifests to write."""
    documents: list[Document] = []
    if options.service:
        service = await resolve_service(client, org, options.service)
        service_id = str(service["id"])
        if options.by_name and service.get("name") == service_id:
            # Chosen by id: a manifest bound by name needs the service's real name.
            service = pick_service(await list_services(client, org), service_id, org)
        if options.pipe_ids:
            pipes = [await find_pipe(client, org, service_id, p) for p in options.pipe_ids]
        else:
            instead = "name the pipes to export with --pipe ID"
            pipes = await pipe_list(client, org, service_id, instead=instead)
        names = unique_names([str(p.get("name") or p.get("id")) for p in pipes], "pipe")
        by_name = str(service.get("name")) if options.by_name else None
        # Chosen by name (a unique one: resolve_service refuses an ambiguous name): keep the name.
        chosen_name = options.service if options.service != service_id else None
        documents += [
            pipe_document(
                p,
                org,
                service_id,
                n,
                with_expectations=options.with_expectations,
                by_name=by_name,
                service_name=chosen_name,
            )
            for p, n in zip(pipes, names, strict=True)
        ]
        documents += await _service_extras(client, org, service, chosen_name, options)
    if options.organization:
        live = await get_organization(client, org)
        documents.append(
            organization_document(live, slugify(str(live.get("name")), "organization"))
        )
    if options.dashboards:
        boards = await get_dashboards(client)
        names = unique_names([str(d.get("name")) for d in boards], "dashboard")
        documents += [dashboard_document(d, n) for d, n in zip(boards, names, strict=True)]
    return documents


# -- YAML and files -------------------------------------------------------------------------


def modeline(kind: str, file: Path) -> str | None:
    """Return the editor modeline for ``file``, or None when the schema lies outside its project.

    The modeline is a path relative to the file. Pointing from a team's repository into this
    tool's install directory would commit a path of one machine, so it is written only when the
    schemas are inside the same project (the directory holding ``reconcile.yaml``, ``.reconcile/``
    or ``.git``) as the exported file.
    """
    target = schema_dir().resolve() / KIND_FILES[kind]
    home = file.resolve().parent
    if not target.is_relative_to(find_project_root(home)):
        return None
    return f"yaml-language-server: $schema={Path(os.path.relpath(target, home)).as_posix()}"


def render_document(document: Document, file: Path) -> str:
    """Return the manifest text of one document, modeline and secret comments included."""
    from ruamel.yaml.comments import CommentedMap

    from reconciler.load.fmt import canonical_yaml

    spec = CommentedMap(document.spec)
    kind = document.source_kind
    if kind and document.secret_hints:
        source = CommentedMap(spec["source"])
        body = CommentedMap(source[kind])
        source[kind] = body
        spec["source"] = source
        text = "\n".join(
            [
                "Write-only (never returned by the API), so left out and not managed. To manage it,",
                "add it here with secret references (never literal values), e.g.:",
                *document.secret_hints,
            ]
        )
        if body:
            body.yaml_set_comment_before_after_key(next(iter(body)), before=text, indent=6)
        else:
            source.yaml_set_comment_before_after_key(kind, before=text, indent=4)
    doc = CommentedMap(
        apiVersion=API_VERSION, kind=document.kind, metadata={"name": document.name}, spec=spec
    )
    line = modeline(document.kind, file)
    if line is not None:
        doc.yaml_set_start_comment(line)
    yaml = canonical_yaml()
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def write_documents(documents: Sequence[Document], out_dir: Path, *, force: bool) -> list[Path]:
    """Write every document under ``out_dir``; refuse (writing nothing) to overwrite unless ``force``."""
    paths = [out_dir / d.relative_path() for d in documents]
    existing = [p for p in paths if p.exists()]
    if existing and not force:
        listed = ", ".join(str(p) for p in existing)
        raise ConfigError(
            f"refusing to overwrite existing file{'s' if len(existing) > 1 else ''} {listed}: "
            "pass --force to replace (nothing was written)"
        )
    texts = [render_document(d, p) for d, p in zip(documents, paths, strict=True)]
    for path, text in zip(paths, texts, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths
