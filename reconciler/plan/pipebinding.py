"""Which live pipe each Pipe manifest is, from a refresh's snapshot: the identity rule for pipes.

A pinned ``pipeId`` is read as such; an unpinned manifest is looked up by the id the state
records for it, else (where the service's pipes are listed) adopted by its ``spec.name``
(``reconciler.model.identity.bind``); with no match it is new and the plan creates it. Two
manifests bound to one live pipe, or two that would create one name in one service, are both
errors. A server that cannot list pipes binds only pinned and recorded ids. ``observe_pipes``
yields each pipe with what the snapshot says of it, one service list decoded at a time (a
10,000-pipe plan never holds every parsed pipe at once); nothing here sends a request.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from reconciler.client.livestate import LiveSnapshot, Observed, PipeList, PipeNeed
from reconciler.client.paths import PipeIds, pipes_path
from reconciler.model.apierrors import ApiError, AuthenticationFailed
from reconciler.model.identity import Binding, Bound, Identities, Listed, bind, find_service
from reconciler.model.json import JsonObject, as_items, as_mapping
from reconciler.model.resources import Resource

__all__: list[str] = []

CANNOT_CREATE = (
    "this pipe has no spec.pipeId and none is recorded in state, but this server cannot list "
    "or create pipes (it offers only the documented pipe endpoints): state spec.pipeId of an "
    "existing pipe, or apply against a server that can create pipes"
)
# The form of an id: anything else in reversePrivateEndpointIds stands for an endpoint the same
# apply creates (the plan's "known after create"), which has no status to read yet.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class PipeSeen:
    """One pipe manifest with what the snapshot says of it (``ids`` None: not located)."""

    resource: Resource
    observed: Observed
    ids: PipeIds | None = None
    binding: Binding | None = None


def pipe_need(resource: Resource, identities: Identities) -> PipeNeed:
    """Return what the refresh reads for a pipe manifest."""
    return dataclasses.replace(
        _known(resource, identities), endpoint_ids=tuple(_endpoint_ids(resource))
    )


def _known(resource: Resource, identities: Identities) -> PipeNeed:
    """Return where a pipe manifest is and the ids it is known by (its endpoints left out)."""
    spec = resource.spec
    pinned = spec.get("pipeId")
    record = identities.record(resource.name)
    scope = record.scope if record is not None else None
    return PipeNeed(
        key=resource.key,
        name=str(spec.get("name", "")),
        organization_id=str(spec.get("organizationId", "")),
        service_id=str(spec["serviceId"]) if "serviceId" in spec else None,
        service_name=str(spec.get("service")),
        pinned=str(pinned) if pinned else "",
        recorded=(record.id or "") if record is not None else "",
        recorded_service=scope.get("serviceId") if scope is not None else None,
    )


class PipeBinder:
    """Binds the pipe manifests of one plan into ``bindings`` and ``pipe_ids`` (by key)."""

    def __init__(
        self,
        identities: Identities,
        bindings: dict[str, Binding],
        pipe_ids: dict[str, PipeIds],
    ) -> None:
        self.identities = identities
        self.bindings = bindings
        self.pipe_ids = pipe_ids

    def ids(self, resource: Resource, org: str, service: str) -> PipeIds:
        """Return where a pipe is: its pinned or recorded id (none yet: bound by name later)."""
        return PipeIds(org, service, _known(resource, self.identities).pipe_id(service))

    def bind_all(self, service: str, members: list[Resource], by_id: dict[str, JsonObject]) -> None:
        """Bind each member to its live pipe by the identity rule, before any is settled.

        Two manifests bound to one live pipe are both errors (nothing is sent for them).
        """
        listed = Listed(by_id)
        owners: dict[str, Resource] = {}
        creates: dict[str, Resource] = {}
        for resource in members:
            ids = self.pipe_ids[resource.key]
            pinned = resource.spec.get("pipeId")
            record = self.identities.record(resource.name)
            if record is not None and not _same_service(record.scope, service):
                record = None
            binding = bind(
                name=str(resource.spec.get("name", "")),
                pinned=str(pinned) if pinned else None,
                record=record,
                listed=listed,
                held=self.identities.held,
                owner=resource.name,
                renamed_from=self.identities.renamed.get(resource.name),
                kind_label="pipe",
            )
            # The live pipe travels in ``Observed`` and is let go once planned; kept here too,
            # every live pipe of a plan would stay alive until its end (+35 MB at 10,000).
            self.bindings[resource.key] = dataclasses.replace(binding, live=None)
            if binding.how is Bound.NEW and binding.error is None:
                # Two creates of one name (a service named once by name, once by id).
                name = str(resource.spec.get("name"))
                first_new = creates.setdefault(name, resource)
                if first_new is not resource:
                    what = f"would both create a pipe named {name!r} in service {service}"
                    self.both_wrong(first_new, resource, what)
            if binding.id:
                self.pipe_ids[resource.key] = PipeIds(
                    ids.organization_id, ids.service_id, binding.id
                )
                first = owners.setdefault(binding.id, resource)
                if first is not resource:
                    self.both_wrong(first, resource, f"pipe {binding.id} is bound to two manifests")

    def both_wrong(self, first: Resource, second: Resource, what: str) -> None:
        """Make two manifests that claim one pipe both errors, each naming the other."""
        for one, other in ((first, second), (second, first)):
            self.bindings[one.key] = dataclasses.replace(
                self.bindings[one.key],
                error=f"{what}: {one.key} and {other.key} ({other.locate('metadata', 'name')}); "
                "keep one of them",
            )


def observe_pipes(
    pipes: Sequence[Resource], snapshot: LiveSnapshot, identities: Identities
) -> Iterator[PipeSeen]:
    """Yield each pipe manifest bound and observed, one service's list decoded at a time."""
    binder = PipeBinder(identities, {}, {})
    groups: dict[tuple[str, str], list[Resource]] = {}
    for resource in pipes:
        located = _locate(resource, snapshot, binder)
        if isinstance(located, Observed):
            yield PipeSeen(resource, located)
            continue
        groups.setdefault((located.organization_id, located.service_id), []).append(resource)
    for key, members in groups.items():
        listed = snapshot.pipe_lists.get(key)
        if listed is None:
            seen: Iterator[PipeSeen] = _read_one_each(members, snapshot, binder)
        else:
            seen = _from_list(key, members, listed, binder)
        for one in seen:
            yield _with_statuses(one, snapshot)


def _locate(resource: Resource, snapshot: LiveSnapshot, binder: PipeBinder) -> PipeIds | Observed:
    """Return where a pipe is (its service resolved), or why it cannot be located."""
    spec = resource.spec
    org = str(spec.get("organizationId", ""))
    if "serviceId" in spec:
        ids = binder.ids(resource, org, str(spec["serviceId"]))
    else:
        services = snapshot.services.get(org, ())
        if isinstance(services, str):
            return Observed(error=services)
        found = find_service(services, str(spec.get("service")), org, instead="use serviceId")
        if isinstance(found, str):
            return Observed(error=found)
        ids = binder.ids(resource, org, str(found["id"]))
    binder.pipe_ids[resource.key] = ids
    return ids


def _from_list(
    key: tuple[str, str], members: list[Resource], listed: PipeList, binder: PipeBinder
) -> Iterator[PipeSeen]:
    """Bind and observe the members of one service from its list (decoded here, let go after)."""
    try:
        by_id = {str(p.get("id")): p for p in listed.decode()} if listed.decode else None
        error = listed.error
    except AuthenticationFailed:
        raise
    except ApiError as exc:
        by_id, error = None, str(exc)
    if by_id is None:
        for resource in members:
            path = binder.pipe_ids[resource.key].path
            yield PipeSeen(
                resource, Observed(error=error, path=path), binder.pipe_ids[resource.key]
            )
        return
    binder.bind_all(key[1], members, by_id)
    for resource in members:
        ids = binder.pipe_ids[resource.key]
        binding = binder.bindings[resource.key]
        if binding.error is not None:
            observed = Observed(error=binding.error, path=ids.path)
        elif binding.how is Bound.NEW:
            observed = Observed(path=pipes_path(ids.organization_id, ids.service_id))
        else:
            pipe = by_id.pop(ids.pipe_id, None)  # let go once planned
            if pipe is None:
                error = f"pipe {ids.pipe_id} not found in service {key[1]}"
                observed = Observed(error=error, path=ids.path)
            else:
                observed = Observed(live=pipe, path=ids.path)
        yield PipeSeen(resource, observed, ids, binding)


def _read_one_each(
    members: list[Resource], snapshot: LiveSnapshot, binder: PipeBinder
) -> Iterator[PipeSeen]:
    """Observe the members of a service whose pipes were read one GET each (pinned or
    recorded ids only: no list, so none is adopted by name or created)."""
    identities = binder.identities
    for resource in members:
        ids = binder.pipe_ids[resource.key]
        if not ids.pipe_id:
            where = resource.locate("spec")
            yield PipeSeen(resource, Observed(error=f"{where}: {CANNOT_CREATE}"), ids)
            continue
        binding = Binding(
            Bound.PINNED if resource.spec.get("pipeId") else Bound.RECORDED,
            ids.pipe_id,
            record=identities.record(resource.name),
            renamed_from=identities.renamed.get(resource.name),
        )
        read = snapshot.pipes_read.get(ids.path, "pipe was not fetched")
        if isinstance(read, str):
            observed = Observed(error=read, path=ids.path)
        else:
            observed = Observed(live=read, path=ids.path)
        yield PipeSeen(resource, observed, ids, binding)


def _with_statuses(seen: PipeSeen, snapshot: LiveSnapshot) -> PipeSeen:
    """Add the statuses of the endpoints a pipe with a live object names."""
    endpoint_ids = _endpoint_ids(seen.resource)
    observed, ids = seen.observed, seen.ids
    if observed.live is None or not endpoint_ids or ids is None:
        return seen
    org, service = ids.organization_id, ids.service_id
    statuses = {e: snapshot.endpoint_status.get((org, service, e)) for e in endpoint_ids}
    return dataclasses.replace(
        seen, observed=dataclasses.replace(observed, endpoint_status=statuses)
    )


def _endpoint_ids(resource: Resource) -> list[str]:
    """Return the reverse private endpoint ids a kafka pipe names (their status is read)."""
    kafka = as_mapping(as_mapping(resource.spec.get("source")).get("kafka"))
    # An id an endpoint created in the same apply will have is not read (it is not one yet).
    return [
        str(i) for i in as_items(kafka.get("reversePrivateEndpointIds")) if _UUID.fullmatch(str(i))
    ]


def _same_service(scope: Mapping[str, str] | None, service: str) -> bool:
    """Tell whether a record's scope (if it names one) is the service ``service``."""
    return scope is None or scope.get("serviceId") in (None, service)
