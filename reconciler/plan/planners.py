"""Pure planning of pipes and organizations: field changes become Actions with minimal bodies.

A pipe's changes become one merge-style PATCH (two when a table is removed and added again,
removals first, because the service refuses both in one request: ``pipeupdate``); an
organization's become a
PATCH with ``privateEndpoints.add/remove``. Dashboards are planned in ``dashboards``. A pipe's
run state and scaling add state-command and scaling requests around the update (``lifecycle``).
Problems the service would refuse (read-only fields, table-mapping edits on a running pipe
the server cannot pause, endpoints that are not Ready) become errors of the action, never
requests.

This module imports neither httpx nor click.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace as evolve
from typing import Any

from reconciler.client.live import Observed
from reconciler.client.paths import PipeIds
from reconciler.model.fields import (
    is_secret_path,
)
from reconciler.model.resources import Resource
from reconciler.model.secrets import SecretTree, fingerprint, holds_secret, secret_paths
from reconciler.plan.actions import (
    Action,
    Op,
    Purpose,
    Request,
)
from reconciler.plan.diff import (
    MISSING,
    ORGANIZATION_FIELDS,
    ChangeKind,
    FieldChange,
    SecretCheck,
    content_hash,
    diff_organization,
    members,
    present,
    project,
    secret_field_name,
)
from reconciler.plan.lifecycle import plan_create, plan_replace, replacement_errors
from reconciler.plan.pipediff import diff_pipe, pipe_managed
from reconciler.plan.pipeupdate import completed_sources, pipe_requests
from reconciler.plan.rules import (
    pipe_rule_errors,
    resend_credentials,
)
from reconciler.plan.runstate import after_create, plan_lifecycle, settled

__all__: list[str] = []


# Change kinds that write nothing through the pipe update.
_NOT_WRITES = frozenset({ChangeKind.EXPECTATION, ChangeKind.CONVERGING, ChangeKind.REPLACE})


def _pipe_ids(ids: Mapping[str, str]) -> PipeIds | None:
    try:
        return PipeIds.from_target(ids)
    except KeyError:
        return None


def plan_pipe(
    resource: Resource,
    spec: Mapping[str, SecretTree],
    observed: Observed,
    secrets: SecretCheck,
    *,
    ids: Mapping[str, str],
    replace: bool = False,
    bound: str | None = None,
    lifecycle: bool = False,
) -> Action:
    """Plan one pipe: ``spec`` has its secrets resolved; ``ids`` its organization/service/pipe.

    A create-time field that differs needs a replacement: with ``replace`` (and no pinned
    ``pipeId``) the pipe is deleted and created again, else that is the action's error.
    ``lifecycle`` tells whether the server has the state and scaling endpoints.
    """
    where = resource.locate("metadata", "name")
    if observed.error is not None or observed.live is None:
        failed = (observed.error or "live pipe not found",)
        return Action(
            "Pipe", resource.name, Op.ERROR, where, errors=failed, target=dict(ids), bound=bound
        )
    live = observed.live
    changes = diff_pipe(resource, spec, live, secrets)
    reasons = [c for c in changes if c.kind is ChangeKind.REPLACE]
    # Located only when needed: past metadata.name, a location parses the manifest again.
    pinned = resource.locate_spec("pipeId") if reasons and "pipeId" in resource.spec else None
    if reasons and replace and pinned is None:
        created = plan_create(resource, spec, secrets, target=ids)
        replaced = plan_replace(created, live, reasons, bound)
        return after_create(resource, spec, replaced)
    changes += resend_credentials(resource, spec, changes)
    basis = project(live, _shape_without_secrets(pipe_managed(spec)))
    life = plan_lifecycle(resource, spec, live, changes, _pipe_ids(ids), offered=lifecycle)
    changes = list(life.changes)
    if isinstance(basis, dict):
        basis.update(life.basis)
        if "state" in basis:  # a pipe on its way to a state is compared as that state
            basis["state"] = settled(str(basis["state"]))
    errors = replacement_errors(reasons, pinned=pinned, replace=replace)
    errors += _expectation_errors(changes, lifecycle)
    errors.extend(life.errors)
    errors += _refusals(observed, changes)
    errors.extend(pipe_rule_errors(resource, spec, live, changes))
    updates = pipe_requests(observed.path, spec, changes)
    errors += completed_sources(resource, spec, live, updates)
    requests = [*life.before, *updates, *life.after]
    recorded = _recorded_fingerprints(changes, secrets)
    stated = {secret_field_name(path) for path in secret_paths(resource)}
    operation = Op.ERROR if errors else (Op.UPDATE if requests else Op.NOOP)
    return Action(
        "Pipe",
        resource.name,
        operation,
        where,
        changes=tuple(changes),
        requests=tuple(requests) if not errors else (),
        errors=tuple(errors),
        warnings=life.warnings if not errors else (),
        target=dict(ids),
        basis=basis,
        secrets=recorded,
        forget_secrets=tuple(sorted(k for k in secrets.recorded if k not in stated)),
        bound=bound,
    )


def _expectation_errors(changes: Sequence[FieldChange], lifecycle: bool) -> list[str]:
    """Name each read-only field stated in the manifest whose live value differs."""
    return [
        f"{change.dotted} is {_show(change.old)} but the manifest ({change.location}) expects "
        f"{_show(change.new)}: {_expectation_hint(change, lifecycle)}"
        for change in changes
        if change.kind is ChangeKind.EXPECTATION
    ]


def _refusals(observed: Observed, changes: Sequence[FieldChange]) -> list[str]:
    """What the service would refuse: updating a completed pipe, endpoints not Ready."""
    errors: list[str] = []
    state = str((observed.live or {}).get("state", ""))
    if state == "Completed" and any(c.kind not in _NOT_WRITES for c in changes):
        errors.append("the pipe is Completed: the service rejects updates to a completed pipe")
    for endpoint_id, status in observed.endpoint_status.items():
        if status is None:
            errors.append(f"reverse private endpoint {endpoint_id} does not exist")
        elif status != "Ready":
            errors.append(f"reverse private endpoint {endpoint_id} is {status}, not Ready")
    return errors


def _recorded_fingerprints(changes: Sequence[FieldChange], secrets: SecretCheck) -> dict[str, str]:
    """Return the fingerprints state records once the secrets these changes send are sent."""
    return {
        secret_field_name(c.path): fingerprint(secrets.key, c.new)
        for c in changes
        if secrets.key is not None
        and present(c.new)
        and (
            c.kind is ChangeKind.SENSITIVE
            or (c.kind is ChangeKind.RESET and is_secret_path(c.path))
        )
    }


def _shape_without_secrets(managed: Mapping[str, Any]) -> dict[str, Any]:
    source = managed.get("source")
    if not isinstance(source, Mapping):
        return dict(managed)
    cleaned: dict[str, Any] = {}
    for kind, sub in source.items():
        if isinstance(sub, Mapping):
            cleaned[kind] = {k: v for k, v in sub.items() if not holds_secret(v)}
        else:
            cleaned[kind] = sub
    return {**managed, "source": cleaned}


def plan_organization(resource: Resource, observed: Observed, org_id: str) -> Action:
    """Plan one organization: name and the set of private endpoints."""
    base = Action(
        "Organization",
        resource.name,
        Op.ERROR,
        resource.locate("metadata", "name"),
        target={"organizationId": org_id},
    )
    if observed.error is not None or observed.live is None:
        return evolve(base, errors=(observed.error or "organization not found",))
    live = observed.live
    changes = diff_organization(resource, live)
    if observed.unknown:
        return _organization_unknown(base, resource, observed, changes)
    removes = [members(c.old) for c in changes if c.kind is ChangeKind.REMOVE]
    adds = [members(c.new) for c in changes if c.kind is ChangeKind.ADD]
    first: dict[str, Any] = {}
    for change in changes:
        if change.kind is ChangeKind.SET:
            first[str(change.path[0])] = change.new
    requests: list[Request] = []
    re_added = {str(a.get("id")) for a in adds} & {str(r.get("id")) for r in removes}
    if re_added:
        first["privateEndpoints"] = {"remove": removes}
        requests.append(
            Request(
                "PATCH",
                observed.path,
                first,
                idempotent=False,
                purpose=Purpose.REMOVE_PRIVATE_ENDPOINTS,
            )
        )
        requests.append(
            Request(
                "PATCH",
                observed.path,
                {"privateEndpoints": {"add": adds}},
                idempotent=False,
                purpose=Purpose.ADD_PRIVATE_ENDPOINTS,
            )
        )
    else:
        endpoints: dict[str, Any] = {}
        if adds:
            endpoints["add"] = adds
        if removes:
            endpoints["remove"] = removes
        if endpoints:
            first["privateEndpoints"] = endpoints
        if first:
            requests.append(
                Request(
                    "PATCH", observed.path, first, idempotent=not endpoints, purpose=Purpose.UPDATE
                )
            )
    managed = (*ORGANIZATION_FIELDS, "privateEndpoints")
    basis = {k: live[k] for k in managed if k in live and k in resource.spec}
    return evolve(
        base,
        operation=Op.UPDATE if requests else Op.NOOP,
        changes=tuple(changes),
        requests=tuple(requests),
        warnings=(observed.note,) if observed.note else (),
        basis=basis,
        basis_hash=content_hash(basis),  # given: ``evolve`` would carry the base's None over
    )


def _organization_unknown(
    base: Action, resource: Resource, observed: Observed, changes: list[FieldChange]
) -> Action:
    # The live organization cannot be read: a PATCH of the (absolute) name — or of nothing —
    # answers with the organization, from which apply computes the endpoint add/remove.
    first: dict[str, Any] = {k: resource.spec[k] for k in ORGANIZATION_FIELDS if k in resource.spec}
    requests = [
        Request(
            "PATCH",
            observed.path,
            first,
            idempotent=True,
            purpose=Purpose.READ_ORGANIZATION,
        )
    ]
    if "privateEndpoints" in resource.spec:
        requests.append(
            Request(
                "PATCH", observed.path, None, idempotent=False, purpose=Purpose.DEFERRED_ENDPOINTS
            )
        )
    return evolve(
        base,
        operation=Op.UPDATE,
        changes=tuple(changes),
        requests=tuple(requests),
        warnings=(observed.note,) if observed.note else (),
    )


def _expectation_hint(change: FieldChange, lifecycle: bool) -> str:
    """Say why an expectation is not sent, or how to ask for it where the server can."""
    if lifecycle and change.dotted == "state" and change.new == "Paused":
        # Paused is what a stopped pipe reports: the desired state that reaches it is Stopped.
        return (
            "apply only checks it (the states it reaches are Running and Stopped); write "
            "`state: Stopped` to have apply stop the pipe (a stopped pipe reports Paused)"
        )
    return "it cannot be changed through the API"


def _show(value: Any) -> str:
    if value is MISSING:
        return "absent"
    if isinstance(value, str):
        return repr(value)
    return str(value)
