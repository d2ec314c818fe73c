"""Which live pipe each Pipe manifest is, while the fetcher reads them: the identity rule.

A pinned ``pipeId`` is read as such; an unpinned manifest is looked up by the id the state
records for it, else (where the service's pipes are listed) adopted by its ``spec.name``
(``reconciler.model.identity.bind``); with no match it is new and the plan creates it. Two
manifests bound to one live pipe, or two that would create one name in one service, are both
errors. A server that cannot list pipes binds only pinned and recorded ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from reconciler.client.paths import PipeIds
from reconciler.model.identity import Binding, Bound, Identities, Listed, bind
from reconciler.model.json import JsonObject
from reconciler.model.resources import Resource


class PipeBinder:
    """Binds the pipe manifests of one fetch; ``bindings`` and ``pipe_ids`` are the fetch's."""

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
        pinned = resource.spec.get("pipeId")
        if pinned:
            return PipeIds(org, service, str(pinned))
        record = self.identities.record(resource.name)
        if record is not None and record.id and _same_service(record.scope, service):
            return PipeIds(org, service, record.id)
        return PipeIds(org, service, "")

    def bind_all(self, service: str, members: list[Resource], by_id: dict[str, JsonObject]) -> None:
        """Bind each member to its live pipe by the identity rule, before any is settled.

        Two manifests bound to one live pipe are both errors (nothing is sent for them).
        """
        listed = Listed(by_id)
        held = self.identities.held
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
                held=held,
                owner=resource.name,
                renamed_from=self.identities.renamed.get(resource.name),
                kind_label="pipe",
            )
            # The live pipe travels in ``Observed`` and is let go once planned; kept here too,
            # every live pipe of a plan would stay alive until its end (+35 MB at 10,000).
            self.bindings[resource.key] = dataclasses.replace(binding, live=None)
            if binding.how is Bound.NEW and binding.error is None:
                # Two creates of one name (a service named once by name, once by id).
                first_new = creates.setdefault(str(resource.spec.get("name")), resource)
                if first_new is not resource:
                    self.both_wrong(
                        first_new,
                        resource,
                        "would both create a pipe named "
                        f"{resource.spec.get('name')!r} in service {service}",
                    )
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


CANNOT_CREATE = (
    "this pipe has no spec.pipeId and none is recorded in state, but this server cannot list "
    "or create pipes (it offers only the documented pipe endpoints): state spec.pipeId of an "
    "existing pipe, or apply against a server that can create pipes"
)


def _same_service(scope: Mapping[str, str] | None, service: str) -> bool:
    """Tell whether a record's scope (if it names one) is the service ``service``."""
    return scope is None or scope.get("serviceId") in (None, service)
