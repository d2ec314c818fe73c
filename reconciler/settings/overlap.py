"""Two environments must not manage one live object.

State and bindings are per workspace, so an environment never sees what another environment
created. Environments on different organizations (or servers) cannot meet, unless a manifest
reaches across; but two that share one organization would: production would adopt, by its name,
the dashboard staging created (and ``--prune`` or ``--replace`` in one would delete what the
other manages). So before an environment is planned, every other environment of the project on
the same server that it may meet is loaded too (its effective manifests only: no state, no
request): one that targets the same organization, or whose organization id is written in this
environment's manifest or overlay files (an overlay setting ``spec.organizationId`` to it). Each
side's identity is taken after its overlays and this run's flags (``--organization`` given with
``--env`` is this environment's only), and each live object both would manage is an error at
this environment's manifest line, naming the other environment — nothing is sent. Environments
on other organizations that no manifest names cost a text scan: their manifests are not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.model.errors import ManifestError, ManifestErrors
from reconciler.model.resources import JsonPath, Resource

if TYPE_CHECKING:
    from reconciler.settings.resolve import Settings

__all__ = ["check_overlaps"]


# A live object's identity: (label, server, organization, key); where in the manifest it is.
Identity = tuple[str, str, str, str]


def identities(resource: Resource, settings: Settings) -> Iterator[tuple[Identity, JsonPath]]:
    """Yield the identities of the live object ``resource`` manages in ``settings``' target."""
    spec = resource.spec
    base = str(settings.get("base_url") or "")
    org = str(spec.get("organizationId") or settings.organization or "")
    if resource.kind == "Organization":
        yield ("organization", base, org, org), ("spec", "organizationId")
    elif resource.kind == "Dashboard":
        dashboards = str(settings.get("dashboards_url") or base)
        name = str(spec.get("name") or resource.name)
        yield ("dashboard named", dashboards, org, name), ("spec", "name")
    elif resource.kind == "Pipe":
        if spec.get("pipeId"):
            yield ("pipe", base, org, str(spec["pipeId"])), ("spec", "pipeId")
        elif spec.get("name"):
            service = str(spec.get("serviceId") or spec.get("service") or "")
            key = f"{service}/{spec['name']}"
            yield ("pipe named", base, org, key), ("spec", "name")


def _target(settings: Settings) -> tuple[str, str]:
    return str(settings.get("base_url") or ""), str(settings.organization or "")


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _meets(mine: Identity, theirs: Identity) -> bool:
    """Tell whether two identities may be one live object.

    A pipe named through its service's id in one environment and its service's name in the
    other may be the same pipe (which service an id is, only the server knows): counted as one.
    """
    if mine == theirs:
        return True
    if mine[0] != "pipe named" or mine[:3] != theirs[:3]:
        return False
    my_service, _, my_name = mine[3].partition("/")
    their_service, _, their_name = theirs[3].partition("/")
    return my_name == their_name and bool(_UUID.match(my_service)) != bool(
        _UUID.match(their_service)
    )


def _written(settings: Settings, organizations: set[str]) -> set[str]:
    """Return the ``organizations`` whose id is written in this environment's manifest or
    overlay files: only a manifest that names another organization can reach it, and reading
    text is far cheaper than loading every manifest."""
    from reconciler.load.manifestfiles import scan_manifest_paths

    if not organizations:
        return set()
    files, _problems = scan_manifest_paths([*settings.manifests, *settings.overlays])
    found: set[str] = set()
    for file in files:
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # the plan reports an unreadable manifest
        found |= {org for org in organizations - found if org in text}
        if found == organizations:
            break
    return found


def _effective(settings: Settings) -> list[Resource]:
    from reconciler.load.overlays import Layering, load_layered

    loaded = load_layered(
        settings.manifests,
        settings.layering() or Layering(),
        default_organization=settings.organization,
        written=False,
    )
    return [e.resource for e in loaded]


def _other(settings: Settings, name: str) -> Settings:
    """Return environment ``name``'s settings as its own run sees them: this run's flags, less
    the organization, which ``--organization`` with ``--env`` gives the chosen one only."""
    from reconciler.settings.resolve import resolve_request

    explicit = {k: v for k, v in settings.request.explicit.items() if k != "organization"}
    request = replace(
        settings.request, explicit=explicit, environment=name, environment_from="--env"
    )
    return resolve_request(request)


def check_overlaps(settings: Settings) -> None:
    """Raise ``ManifestErrors`` for each live object the chosen environment and another one
    would both manage, each side's identity taken after its overlays and flags (an overlay
    may point a manifest at another organization). Environments whose organization none of
    this one's manifests reaches are not read."""
    from reconciler.model.errors import ReconcileError

    env = settings.environment
    if env is None or not settings.manifests:
        return
    base = str(settings.get("base_url") or "")
    candidates: list[tuple[str, Settings]] = []
    for name in settings.environments:
        if name == env.name:
            continue
        try:
            other = _other(settings, name)
        except ReconcileError:
            continue  # its own run reports what is wrong with it
        if _target(other)[0] == base and other.manifests:
            candidates.append((name, other))
    written = _written(settings, {_target(o)[1] for _, o in candidates} - {""})
    candidates = [
        (n, o) for n, o in candidates if _target(o) == _target(settings) or _target(o)[1] in written
    ]
    if not candidates:
        return
    mine = [
        (resource, ident, path)
        for resource in _effective(settings)  # its own errors are raised here, as the plan's
        for ident, path in identities(resource, settings)
    ]
    reached = {ident[2] for _, ident, _ in mine}
    errors: list[ManifestError] = []
    for name, other in candidates:
        if _target(other)[1] not in reached:
            continue
        try:
            theirs = _effective(other)
        except ReconcileError:
            continue  # an environment whose manifests do not load is reported by its own run
        held = [(ident, r.key) for r in theirs for ident, _ in identities(r, other)]
        where = settings.project.where((*env.key[:1], name)) if settings.project else name
        for resource, ident, path in mine:
            found = next((key for their, key in held if _meets(ident, their)), None)
            if found is not None:
                # Reached through another organization: point at the line that chose it.
                reached_across = ident[2] != (settings.organization or "")
                if reached_across:
                    path = ("spec", "organizationId")
                errors.append(_overlap(resource, path, ident, found, name, where, reached_across))
    if errors:
        raise ManifestErrors(errors)


def _overlap(
    resource: Resource,
    path: JsonPath,
    ident: Identity,
    theirs: str,
    name: str,
    where: str,
    reached_across: bool = False,
) -> ManifestError:
    label, _server, org, key = ident
    what = (
        f"organization {org}"
        if label == "organization"
        else f"{label} {key!r} of organization {org}"
    )
    if reached_across:
        fix = (
            f"this environment's {resource.key} names environment {name}'s organization: "
            "remove that spec.organizationId, or exclude the resource here"
        )
    elif label == "organization":
        fix = f"exclude {resource.key} from one of them"
    else:
        fix = f"give it another name in one environment's overlay, or exclude {resource.key} there"

    return ManifestError(
        resource.locate(*path),
        ".".join(str(p) for p in path),
        f"{what} is also managed by {theirs} in environment {name} ({where}): one environment "
        f"would adopt, change or prune what the other manages; {fix}",
    )
