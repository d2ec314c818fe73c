"""Two environments must not manage one live object.

State and bindings are per workspace, so an environment never sees what another environment
created. Environments on different organizations (or servers) cannot meet; but two that share
one organization would: production would adopt, by its name, the dashboard staging created
(and ``--prune`` or ``--replace`` in one would delete what the other manages). So before an
environment is planned, every other environment of the project that targets the same
organization on the same server is loaded too (its effective manifests only: no state, no
request), and each live object both would manage is an error at this environment's manifest
line, naming the other environment — nothing is sent. Environments on other organizations
cost nothing: their manifests are not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from reconciler.model.errors import ManifestError, ManifestErrors
from reconciler.model.resources import JsonPath, Resource

if TYPE_CHECKING:
    from reconciler.settings.resolve import Settings

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


def _effective(settings: Settings) -> list[Resource]:
    from reconciler.load.overlays import Layering, load_layered

    loaded = load_layered(
        settings.manifests,
        settings.layering() or Layering(),
        default_organization=settings.organization,
        written=False,
    )
    return [e.resource for e in loaded]


def check_overlaps(settings: Settings) -> None:
    """Raise ``ManifestErrors`` for each live object the chosen environment and another one
    sharing its organization and server would both manage (nothing when none shares it)."""
    from reconciler.model.errors import ReconcileError

    env = settings.environment
    if env is None or not settings.organization or not settings.manifests:
        return
    sharing: list[tuple[str, Settings]] = []
    for name in settings.environments:
        if name == env.name:
            continue
        try:
            other = settings.for_environment(name)
        except ReconcileError:
            continue  # its own run reports what is wrong with it
        if _target(other) == _target(settings) and other.manifests:
            sharing.append((name, other))
    if not sharing:
        return
    mine = _effective(settings)  # its own errors are raised here, as the plan would
    errors: list[ManifestError] = []
    for name, other in sharing:
        try:
            theirs = _effective(other)
        except ReconcileError:
            continue  # an environment whose manifests do not load is reported by its own run
        held = {ident: r.key for r in theirs for ident, _ in identities(r, other)}
        where = settings.project.where((*env.key[:1], name)) if settings.project else name
        for resource in mine:
            for ident, path in identities(resource, settings):
                if ident in held:
                    errors.append(_overlap(resource, path, ident, held[ident], name, where))
    if errors:
        raise ManifestErrors(errors)


def _overlap(
    resource: Resource, path: JsonPath, ident: Identity, theirs: str, name: str, where: str
) -> ManifestError:
    label, _server, org, key = ident
    what = (
        f"organization {org}"
        if label == "organization"
        else f"{label} {key!r} of organization {org}"
    )
    fix = (
        f"exclude {resource.key} from one of them"
        if label == "organization"
        else f"give it another name in one environment's overlay, or exclude {resource.key} there"
    )
    return ManifestError(
        resource.locate(*path),
        ".".join(str(p) for p in path),
        f"{what} is also managed by {theirs} in environment {name} ({where}), which targets the "
        f"same organization: one environment would adopt, change or prune what the other "
        f"manages; {fix}",
    )
