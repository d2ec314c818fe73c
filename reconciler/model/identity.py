"""Identity: which live object a manifest is bound to, by one rule for pipes and dashboards.

A manifest is bound, in order: to the id it states (pinned: a pipe's ``spec.pipeId``); else to
the id the state records for its ``metadata.name`` in this workspace; else, where the server
lists that kind, to the one live object whose name is the manifest's ``spec.name`` (adopted:
recorded at apply, so from then on the id is the identity and a rename is an update). No match
means the plan creates it; two or more matches are an error naming them, and nothing is sent.

A live object that the state records for *another* manifest is never adopted by name: a copy
of a manifest under a new ``metadata.name`` is a new resource, not a second owner of the
original's object. A record whose manifest is gone moves to a new ``metadata.name`` only when
the rename is known (``metadata.renamedFrom``) or may be inferred (the run sees every manifest
of that kind the project has): ``rename_source``.

``Record`` is what the state keeps per manifest; ``bind`` is pure, so the fetcher (while it
settles a service's pipe list) and the dashboard planner share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from reconciler.model.errors import suggest
from reconciler.model.json import JsonMapping, JsonObject

__all__ = [
    "Binding",
    "Bound",
    "Identities",
    "Listed",
    "Record",
    "bind",
    "find_service",
    "rename_source",
]


@dataclass(frozen=True)
class Record:
    """What state remembers about the live object of one manifest (a pipe or a dashboard).

    ``scope`` is where the id lives (a pipe's organization and service ids; empty for a
    dashboard). ``created_by_us`` marks objects this tool created: the only ones prune deletes.
    ``uncertain`` marks a create whose answer was lost (or that the server failed on); for a
    pipe, ``content_hash`` then fingerprints the body that create sent, so that adopting the
    pipe showing it proves it this tool's own. An object adopted otherwise never is.
    """

    id: str | None
    content_hash: str | None = None
    created_by_us: bool = False
    uncertain: bool = False
    display_name: str | None = None
    scope: Mapping[str, str] | None = None
    # The manifest file last applied for it (as the run named it); None: not recorded.
    manifest: str | None = None


class Bound(StrEnum):
    """How a manifest found its live object."""

    PINNED = "pinned"  # the manifest states the id
    RECORDED = "recorded"  # the state records the id for this manifest
    ADOPTED = "adopted"  # the one live object with the manifest's spec.name
    NEW = "new"  # nothing matches: the plan creates it


@dataclass(frozen=True, slots=True)  # one per bound manifest: thousands in a large plan
class Binding:
    """The live object one manifest is bound to (or why it cannot be bound)."""

    how: Bound
    id: str | None = None
    live: JsonMapping | None = None
    record: Record | None = None
    # The metadata.name whose state record this manifest takes over (a rename).
    renamed_from: str | None = None
    error: str | None = None
    # A live object with the manifest's name that another manifest's record holds (not adopted).
    held_elsewhere: tuple[tuple[str, str], ...] = ()


def bind(
    *,
    name: str,
    pinned: str | None,
    record: Record | None,
    listed: Listed | None,
    held: Mapping[str, str] | None = None,
    owner: str | None = None,
    renamed_from: str | None = None,
    kind_label: str = "object",
) -> Binding:
    """Apply the identity rule to one manifest.

    ``listed`` holds the live objects of the manifest's scope (None when the server cannot
    list them: then only a pinned or recorded id binds); ``held`` maps the ids state records
    to the ``metadata.name`` holding each: one held by another than ``owner`` (this manifest's
    ``metadata.name``) is never adopted by name. A pinned or recorded id that ``listed`` does not show leaves ``live`` None (gone).
    """
    if pinned:
        live = listed.by_id.get(pinned) if listed is not None else None
        return Binding(Bound.PINNED, pinned, live, record, renamed_from)
    if record is not None and record.id:
        live = listed.by_id.get(record.id) if listed is not None else None
        if listed is None or live is not None:
            return Binding(Bound.RECORDED, record.id, live, record, renamed_from)
        # Recorded, but gone from the server: adopt by name or create again (never an error).
    if listed is None:
        return Binding(Bound.NEW, record=record, renamed_from=renamed_from)
    held = held or {}
    free: list[JsonMapping] = []
    others: list[tuple[str, str]] = []
    for item in listed.named(name):
        holder = held.get(str(item.get("id")))
        if holder is None or holder == owner:
            free.append(item)
        else:
            others.append((str(item.get("id")), holder))
    if len(free) > 1:
        ids = ", ".join(str(i.get("id")) for i in free)
        return Binding(
            Bound.NEW,
            record=record,
            error=f"{len(free)} live {kind_label}s are named {name!r} ({ids}): cannot tell which "
            "one this manifest means; state its id, or rename all but one on the server",
        )
    if free:
        live = free[0]
        adopted = str(live.get("id"))
        return Binding(Bound.ADOPTED, adopted, live, record, renamed_from, None, tuple(others))
    return Binding(
        Bound.NEW, record=record, renamed_from=renamed_from, held_elsewhere=tuple(others)
    )


class Listed:
    """The live objects of one scope, by id and (built on first use) by name.

    ``name_key`` is the field that names an object within its scope (a reverse private
    endpoint is named by its ``description``).
    """

    def __init__(self, by_id: Mapping[str, JsonMapping], name_key: str = "name") -> None:
        self.by_id = by_id
        self.name_key = name_key
        self._by_name: dict[str, list[JsonMapping]] | None = None

    @classmethod
    def of(cls, items: Iterable[JsonMapping], name_key: str = "name") -> Listed:
        """Index a list of live objects."""
        return cls({str(i.get("id")): i for i in items}, name_key)

    def named(self, name: str) -> list[JsonMapping]:
        """Return the live objects whose ``name_key`` is ``name``."""
        if self._by_name is None:
            self._by_name = {}
            for item in self.by_id.values():
                self._by_name.setdefault(str(item.get(self.name_key)), []).append(item)
        return self._by_name.get(name, [])


def rename_source(
    name: str,
    declared: str | None,
    orphans: Mapping[str, Record],
    *,
    may_infer: bool,
    matches: Iterable[str] = (),
) -> str | None:
    """Return the ``metadata.name`` whose record this manifest takes over, if any.

    ``declared`` is the manifest's ``metadata.renamedFrom``; ``orphans`` the records whose
    manifests the run does not have; ``matches`` the orphans that hold the same live object
    (in order of preference). Without a declaration a rename is inferred only when
    ``may_infer`` (the run covers every manifest of that kind the project has).
    """
    if declared is not None:
        return declared if declared in orphans and declared != name else None
    if not may_infer:
        return None
    return next((m for m in matches if m in orphans and m != name), None)


@dataclass(frozen=True)
class Identities:
    """What the state knows about one kind's manifests, ready for ``bind``.

    ``renamed`` maps a manifest's ``metadata.name`` to the old name whose record it takes
    over (see ``rename_source``); ``held`` maps each recorded id to the name holding it (a
    record taken over by a rename is held by its new name).
    """

    records: Mapping[str, Record]
    renamed: Mapping[str, str]

    def record(self, name: str) -> Record | None:
        """Return the record this manifest is bound by (its own, or the one it renames)."""
        return self.records.get(self.renamed.get(name, name))

    @cached_property
    def held(self) -> dict[str, str]:
        """Return each recorded id mapped to the ``metadata.name`` of the manifest holding it."""
        new_name = {old: new for new, old in self.renamed.items()}
        return {r.id: new_name.get(n, n) for n, r in self.records.items() if r.id}


def find_service(
    services: Sequence[JsonObject], ref: str, org: str, *, instead: str
) -> JsonObject | str:
    """Return the one service of ``services`` named (or identified by) ``ref``, or say why none is.

    The one rule for a service given by name (a manifest's ``spec.service``, ``--service``): not
    found names the organization's services (and the likeliest one meant); several of that name
    are ambiguous, and ``instead`` says what to give then (``use serviceId``, ``use its id``).
    """
    found = [s for s in services if ref in (s.get("name"), s.get("id"))]
    if len(found) == 1:
        return found[0]
    if found:
        return f"service name {ref!r} is ambiguous ({len(found)} services); {instead}"
    names = sorted({str(s.get("name")) for s in services})
    known = ", ".join(names) or "none"
    return (
        f"service {ref!r} not found in organization {org}{suggest(ref, names)} (services: {known})"
    )
