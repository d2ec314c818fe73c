"""Drift between our manifest schemas and the contract: what we do not manage, what we accept wrongly.

The writable fields of the contract are the fields of the request bodies we drive: a pipe's
create and update bodies (``PipePostRequest``, ``PipePatchRequest``), its scaling body and the
organization's update body. Each is mapped onto the manifest's spec (the postgres
``tableMappingsToAdd``/``…ToRemove`` are our ``tableMappings``; the organization's
``privateEndpoints.add``/``.remove`` are our ``privateEndpoints``). ``unmanaged()`` lists the
contract's fields our schemas lack (a whole subtree once: ``source.mysql``, not each leaf);
``refused()`` lists the values our schemas accept that the contract's schema of the same field
refuses (a wider type or enum, a looser bound, a null the request cannot carry).
``python -m tests.contract.drift`` (``make contract-check``) prints both, one line each.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.load.schema import load_schemas
from reconciler.model.fields import CREATE_OMITS_NULL, RESET_SENDS_DEFAULT, is_writable_pipe_path
from tests.contract.oracle import Contract

Path = tuple[str, ...]
ITEM = "[]"
# Contract paths under another name in our manifests.
_RENAMES: dict[Path, Path] = {
    **{
        ("source", kind, edit): ("source", kind, "tableMappings")
        for kind in ("postgres", "mysql", "mongodb")
        for edit in ("tableMappingsToAdd", "tableMappingsToRemove")
    },
    ("privateEndpoints", "add"): ("privateEndpoints",),
    ("privateEndpoints", "remove"): ("privateEndpoints",),
}
# What each kind's spec is written through: (the request schema, its role).
_BODIES: dict[str, tuple[tuple[str, str], ...]] = {
    "Pipe": (
        ("PipePostRequest", "create"),
        ("PipePatchRequest", "update"),
        ("PipeScalingPatchRequest", "scaling"),
    ),
    "Organization": (("OrganizationPatchRequest", "update"),),
}


@dataclass(frozen=True)
class Field:
    """One field of a request body of the contract: where, in which body, and its schema."""

    path: Path
    body: str
    role: str
    schema: Mapping[str, Any]

    @property
    def dotted(self) -> str:
        """The path as the spec writes it (``[]`` marks an array's items)."""
        return ".".join(self.path).replace(".[]", "[]")


def contract_fields(kind: str, contract: Contract | None = None) -> Iterator[Field]:
    """Every field of the request bodies that write ``kind``, mapped onto the spec's paths."""
    contract = contract or Contract.load()
    for body, role in _BODIES[kind]:
        prefix: Path = ("scaling",) if role == "scaling" else ()
        for path, schema in _walk(contract.schema(body), contract, prefix):
            renamed = _renamed(path)
            if renamed in _RENAMES.values() and (
                renamed != path or any(old[:-1] == path for old in _RENAMES)
            ):
                continue  # the container of a list we write in another form (add/remove)
            yield Field(renamed, body, role, schema)


def _walk(
    schema: Mapping[str, Any], contract: Contract, path: Path
) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    schema = _resolved(schema, contract)
    if path:
        yield path, schema
    branches = [_resolved(b, contract) for b in schema.get("anyOf", schema.get("oneOf", []))]
    for branch in [schema, *branches]:
        for name, sub in branch.get("properties", {}).items():
            yield from _walk(sub, contract, (*path, name))
        if "items" in branch:
            yield from _walk(branch["items"], contract, (*path, ITEM))


def _resolved(schema: Mapping[str, Any], contract: Contract) -> Mapping[str, Any]:
    """Follow ``$ref`` and step through ``oneOf [X, null]`` to X (null is judged apart)."""
    while True:
        if "$ref" in schema:
            schema = contract.schema(str(schema["$ref"]).rsplit("/", 1)[-1])
            continue
        options = [b for b in schema.get("oneOf", []) if b != {"type": "null"}]
        if len(options) == 1 and len(schema.get("oneOf", [])) == 2:
            schema = options[0]
            continue
        return schema


def _renamed(path: Path) -> Path:
    for old, new in _RENAMES.items():
        if path[: len(old)] == old:
            return (*new, *path[len(old) :])
    return path


class Ours:
    """Our manifest schema of one kind, walked by spec path."""

    def __init__(self, kind: str):
        self.schemas = load_schemas()
        file = {"Pipe": "pipe.schema.json", "Organization": "organization.schema.json"}[kind]
        root = self.schemas[file]
        self.root = root["$defs"]["spec"] if kind == "Pipe" else root["properties"]["spec"]
        self.file = file

    def resolve(self, node: Any, doc: str) -> tuple[dict[str, Any], str]:
        """Follow ``$ref`` across our schema files."""
        while isinstance(node, dict) and "$ref" in node:
            target, _, pointer = str(node["$ref"]).partition("#")
            doc = target or doc
            node = self.schemas[doc]
            for part in [p for p in pointer.split("/") if p]:
                node = node[part]
        return node, doc

    def find(self, path: Path) -> dict[str, Any] | None:
        """Our schema of ``path``, or None when we have no such field."""
        node, doc = self.resolve(self.root, self.file)
        for part in path:
            if self.is_secret(node):
                return node  # a secret reference stands for the whole value
            node, doc = self._child(node, doc, part)
            if node is None:
                return None
        return node

    def _child(self, node: dict[str, Any], doc: str, part: str) -> tuple[Any, str]:
        alternatives = node.get("oneOf", []) + node.get("anyOf", [])
        for branch, where in [(node, doc), *[self.resolve(b, doc) for b in alternatives]]:
            sub = branch.get("items") if part == ITEM else branch.get("properties", {}).get(part)
            if sub is not None:
                return self.resolve(sub, where)
        return None, doc

    def is_secret(self, node: Mapping[str, Any]) -> bool:
        """A secret reference (``{fromEnv}`` / ``{fromFile}``), alone or with null."""
        titles = {str(b.get("title", "")) for b in node.get("oneOf", []) if isinstance(b, dict)}
        if "{fromEnv: NAME}" in titles:
            return True
        refs = [b for b in node.get("anyOf", []) if isinstance(b, dict) and "$ref" in b]
        return any(self.is_secret(self.resolve(b, "common.schema.json")[0]) for b in refs)


def unmanaged(kind: str) -> list[str]:
    """The contract's writable fields our schema of ``kind`` lacks (a missing subtree once)."""
    ours = Ours(kind)
    missing: list[str] = []
    for field in contract_fields(kind):
        if any(
            field.dotted.startswith(m + ".") or field.dotted.startswith(m + "[]") for m in missing
        ):
            continue
        if ours.find(field.path) is None and field.dotted not in missing:
            missing.append(field.dotted)
    return missing


def refused(kind: str) -> list[str]:
    """Values our schema of ``kind`` accepts that the contract refuses for the same field."""
    ours = Ours(kind)
    found: list[str] = []
    for field in contract_fields(kind):
        mine = ours.find(field.path)
        if mine is None or ours.is_secret(mine):
            continue
        found += [f"{field.dotted} ({field.body}): {p}" for p in _looser(mine, field, kind)]
    return sorted(set(found))


def misfiled() -> list[str]:
    """Pipe fields our field catalogue files otherwise than the contract: a field of the update
    body must be writable, a field only the create body has must be create-time."""
    ours = Ours("Pipe")
    by_path: dict[Path, set[str]] = {}
    for field in contract_fields("Pipe"):
        if field.role != "scaling" and ITEM not in field.path:
            by_path.setdefault(field.path, set()).add(field.role)
    found: list[str] = []
    for path, roles in sorted(by_path.items()):
        if ours.find(path) is None or path in _RENAMES.values():
            continue  # not ours, or written in another form (add/remove lists)
        writable = is_writable_pipe_path(path)
        dotted = ".".join(path)
        if "update" in roles and not writable:
            found.append(f"{dotted}: the update body takes it, our catalogue says create-time")
        elif roles == {"create"} and writable and path[0] != "scaling":
            found.append(f"{dotted}: only the create body takes it, our catalogue says writable")
    return found


def _types(schema: Mapping[str, Any]) -> set[str]:
    value = schema.get("type")
    named = {value} if isinstance(value, str) else set(value or ())
    if "enum" in schema and not named:
        named = {
            "null" if v is None else type(v).__name__.replace("str", "string")
            for v in schema["enum"]
        }
    return named


def _looser(mine: Mapping[str, Any], field: Field, kind: str) -> Iterator[str]:
    theirs = field.schema
    ours_types, their_types = _types(mine), _types(theirs)
    if ours_types and their_types:
        wider = {
            t
            for t in ours_types - their_types - {"null"}
            if not (t == "integer" and "number" in their_types)
        }
        if wider:
            yield f"type {sorted(wider)} not in {sorted(their_types)}"
    if "null" in ours_types or None in mine.get("enum", ()):
        yield from _null(field, kind, "null" in their_types)
    if "enum" in theirs:
        extra = [v for v in mine.get("enum", ()) if v is not None and v not in theirs["enum"]]
        if extra or ("enum" not in mine and "string" in ours_types and "const" not in mine):
            yield f"enum: accepts {extra or 'any string'}, the contract takes {theirs['enum']}"
    for low, floor in (("minimum", float("-inf")), ("minLength", 0), ("minItems", 0)):
        if low in theirs and mine.get(low, floor) < theirs[low]:
            yield f"{low} {mine.get(low)} below the contract's {theirs[low]}"
    for high in ("maximum", "maxLength", "maxItems"):
        if high in theirs and mine.get(high, float("inf")) > theirs[high]:
            yield f"{high} {mine.get(high)} above the contract's {theirs[high]}"
    if theirs.get("uniqueItems") and not mine.get("uniqueItems"):
        yield "uniqueItems: accepts repeated items"
    step = theirs.get("multipleOf")
    if step is not None and ("multipleOf" not in mine or mine["multipleOf"] % step):
        yield f"multipleOf: the contract takes multiples of {theirs['multipleOf']}"


def _null(field: Field, kind: str, takes_null: bool) -> Iterator[str]:
    """A null we accept must be one the body sending it takes (or one we send otherwise)."""
    if takes_null or kind != "Pipe" or field.path in RESET_SENDS_DEFAULT:
        return
    if field.role == "create" and any(field.path[: len(p)] == p for p in CREATE_OMITS_NULL):
        return
    if field.role == "create" and is_writable_pipe_path(field.path) and field.path[0] != "scaling":
        return  # a reset of a writable field goes through the update body, judged there
    yield f"null: accepted, but the {field.role} body takes none"


def main() -> int:
    """Print the contract's fields we do not manage, then what we accept that it refuses."""
    for kind in _BODIES:
        for dotted in unmanaged(kind):
            print(f"{kind} spec.{dotted}: not managed")
    problems = [f"{kind} spec.{line}" for kind in _BODIES for line in refused(kind)]
    for line in problems:
        print(f"{line}  (accepted by our schema, refused by the contract)")
    filed = [f"Pipe spec.{line}" for line in misfiled()]
    for line in filed:
        print(line)
    return 1 if problems or filed else 0


if __name__ == "__main__":
    sys.exit(main())
