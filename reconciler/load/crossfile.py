"""Checks that span manifest files: one name per kind, one manifest per live object.

Each file is read on its own into records: a ``Named`` record is a document that passed the
checks it allows on its own; ``Loader`` takes the records in file order and holds them to
the checks between files.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.load.positions import DocumentLocator, MergedLocator
from reconciler.model.errors import ManifestError
from reconciler.model.json import JsonObject
from reconciler.model.resources import JsonPath, Resource, format_path

__all__: list[str] = []


# What binds a manifest to one live object, per kind: two manifests may not share it.
IDENTITY_FIELDS: dict[str, tuple[tuple[str, JsonPath], ...]] = {
    "Pipe": (("pipe", ("spec", "pipeId")), ("pipe named", ("spec", "name"))),
    "Organization": (("organization", ("spec", "organizationId")),),
    "Dashboard": (("dashboard named", ("spec", "name")),),
    "ReversePrivateEndpoint": (("reverse private endpoint described", ("spec", "description")),),
    "CdcScaling": (
        ("CDC scaling of service", ("spec", "serviceId")),
        ("CDC scaling of service named", ("spec", "service")),
    ),
}


@dataclass(slots=True)
class Named:
    """A document that passed the checks it allows on its own, awaiting those that span files.

    ``clean`` is false when a check on its spec failed (its errors precede it): its name is
    still claimed, but it yields no resource.
    """

    locator: DocumentLocator | MergedLocator
    kind: str
    name: str
    spec: JsonObject
    clean: bool
    renamed_from: str | None = None

    def __reduce__(self) -> tuple[type[Named], tuple[object, ...]]:
        fields = (self.locator, self.kind, self.name, self.spec, self.clean, self.renamed_from)
        return (Named, fields)  # cheap


Record = ManifestError | Named


class Loader:
    """Takes records in file order and applies the checks that span files."""

    def __init__(self) -> None:
        self.resources: list[Resource] = []
        self.errors: list[ManifestError] = []
        self.names: dict[tuple[str, str], DocumentLocator | MergedLocator] = {}
        self.identities: dict[
            tuple[str, str, str], tuple[DocumentLocator | MergedLocator, str]
        ] = {}

    def error(self, locator: DocumentLocator | MergedLocator, path: JsonPath, message: str) -> None:
        self.errors.append(ManifestError(locator.locate(path), format_path(path), message))

    def take(self, records: list[Record]) -> None:
        """Take one part's records (parts must come in file order)."""
        for record in records:
            if isinstance(record, ManifestError):
                self.errors.append(record)
            else:
                self.take_named(record)

    def take_named(self, doc: Named) -> None:
        locator, kind, name = doc.locator, doc.kind, doc.name
        first = self.names.get((kind, name))
        if first is not None:
            there = first.locate(("metadata", "name"))
            self.error(
                locator,
                ("metadata", "name"),
                f"duplicate {kind} name '{name}': also defined at {there}",
            )
            return
        self.names[(kind, name)] = locator
        if doc.clean and self.check_identity(locator, kind, name, doc.spec):
            source = locator.source
            self.resources.append(
                Resource(
                    kind, name, doc.spec, source.name, locator.document, locator, doc.renamed_from
                )
            )

    def check_identity(
        self, locator: DocumentLocator | MergedLocator, kind: str, name: str, spec: JsonObject
    ) -> bool:
        """Refuse a second manifest addressing a live object another manifest already addresses."""
        for label, path in IDENTITY_FIELDS.get(kind, ()):
            value = spec.get(str(path[-1])) if kind != "Dashboard" else spec.get("name", name)
            if not isinstance(value, str):
                continue
            # A pipe id is unique within its organization (however its service is named); a
            # pipe bound by name (no pipeId) is one per name within its service.
            scope = str(spec.get("organizationId")) if kind == "Pipe" else ""
            if kind == "CdcScaling":  # one per service
                scope = str(spec.get("organizationId"))
            if kind == "ReversePrivateEndpoint":  # a description is unique within its service
                scope = f"{spec.get('organizationId')}/{spec.get('serviceId', spec.get('service'))}"
            if label == "pipe named":
                if "pipeId" in spec:
                    continue
                scope += "/" + str(spec.get("serviceId", spec.get("service")))
            first = self.identities.get((label, scope, value))
            if first is None:
                self.identities[(label, scope, value)] = (locator, f"{kind}/{name}")
                continue
            there, owner = first[0].locate(path), first[1]
            self.error(
                locator,
                path,
                f"{label} {value if label in ('pipe', 'organization') else repr(value)} is also addressed by {owner} at {there}: two manifests must "
                "not manage one live object",
            )
            return False
        return True
