"""The field catalogue: the pipe schema's ``x-reconcile`` annotations say, once, which fields are
writable, create-time, sensitive, required to create or sent with every update — and everything
that acts on those facts agrees with them.

The emulator shares no code with the client, so its idea of a writable field is read from the
outside: the update body it validates (its ``PIPE_UPDATE`` rules, described as JSON Schema),
the create body, and what its update handler refuses. Each annotation is also checked against
the rest of the schema (a sensitive field takes only secret references; a field whose null is
left out of a create accepts null), against the schema's own prose, against the read-only
views, and against plans: no secret a field holds ever shows in a plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from reconciler.client.live import Observed
from reconciler.emulator.organization_bodies import ORGANIZATION_UPDATE
from reconciler.emulator.patch_bodies import PIPE_UPDATE, validate_pipe_update
from reconciler.emulator.pipe_bodies import PIPE_CREATE
from reconciler.emulator.protocol import ApiError
from reconciler.inventory.views import source_summary
from reconciler.load.explain import explain
from reconciler.load.schema import load_schemas
from reconciler.model import fields
from reconciler.model.catalogue import (
    ANNOTATION,
    ORGANIZATION_FILE,
    PIPE_FILE,
    facts,
    field_paths,
)
from reconciler.model.resources import JsonPath, Resource, format_path
from reconciler.model.secrets import resolve_pipe_secrets
from reconciler.plan import planfile
from reconciler.plan.actions import Plan
from reconciler.plan.diff import SecretCheck
from reconciler.plan.lifecycle import plan_create
from reconciler.plan.planners import plan_pipe
from reconciler.plan.render import render_markdown, render_text

Path = tuple[str, ...]
IDS = {"organizationId": "org-1", "serviceId": "svc-1", "pipeId": "pipe-1"}
# How the emulator's update body spells what a manifest states otherwise: a database pipe's
# table mappings are edited as additions and removals.
_WIRE_NAMES = {"tableMappingsToAdd": "tableMappings", "tableMappingsToRemove": "tableMappings"}
_KNOWN_FACTS = {
    "writable",
    "createTime",
    "sensitive",
    "requiredToCreate",
    "sentWithEveryUpdate",
    "createOmitsNull",
    "resetSendsDefault",
    "readBack",
    "identity",
    "sentAs",
}


def _body_fields(schema: Mapping[str, Any], path: Path = ()) -> Iterator[tuple[Path, bool]]:
    """Every field of a request body the emulator validates (its rules' JSON Schema), with
    whether the body requires it: through nullable alternatives, not into lists."""
    for alternative in schema.get("anyOf", ()):
        if alternative.get("type") != "null":
            yield from _body_fields(alternative, path)
    required = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        here = (*path, _WIRE_NAMES.get(name, name))
        yield here, name in required
        if sub.get("type") != "array":
            yield from _body_fields(sub, here)


EMULATOR_UPDATE = dict(_body_fields(PIPE_UPDATE.schema))
EMULATOR_CREATE = dict(_body_fields(PIPE_CREATE.schema))
LISTED = field_paths()
SENDABLE = [p for p in LISTED if not facts(p).identity and facts(p).sent_as is None]
WRITABLE = [p for p in SENDABLE if facts(p).writable]
# The create-time fields a manifest states, each once (not every field inside one).
CREATE_TIME = [
    p for p in LISTED if fields.is_create_time_path(p) and not fields.is_create_time_path(p[:-1])
]


def _dotted(path: JsonPath) -> str:
    return format_path(path)


# -- the catalogue and the emulator -----------------------------------------------------------


@pytest.mark.parametrize("path", sorted(EMULATOR_UPDATE), ids=_dotted)
def test_every_field_the_emulator_update_takes_is_writable_in_the_catalogue(path: Path) -> None:
    found = facts(path)
    # Inside a secret the schema lists only reference shapes: the secret field itself is what
    # the catalogue files (the whole subtree is writable with it).
    assert found.listed or found.sensitive, f"{_dotted(path)}: the pipe schema lacks it"
    assert found.writable, f"{_dotted(path)}: the emulator's update takes it, not writable here"


@pytest.mark.parametrize("path", WRITABLE, ids=_dotted)
def test_every_writable_field_of_the_catalogue_is_taken_by_the_emulator_update_and_create(
    path: Path,
) -> None:
    assert path in EMULATOR_UPDATE, f"{_dotted(path)}: writable here, the emulator refuses it"
    # A create sends every stated field: a writable one too.
    assert path in EMULATOR_CREATE, f"{_dotted(path)}: writable here, not in the create body"


# Values of the members the emulator's update of a source requires (sent with every update).
_REQUIRED_VALUES: dict[str, Any] = {
    "host": "db.example.com",
    "port": 3306,
    "uri": "mongodb://db.example.com",
    "readPreference": "primary",
    "authentication": "SERVICE_ACCOUNT",
    "serviceAccountKey": {"serviceAccountFile": "a2V5"},
}


@pytest.mark.parametrize("path", CREATE_TIME, ids=_dotted)
def test_the_emulator_refuses_a_create_time_field_in_an_update_and_takes_it_on_create(
    path: Path,
) -> None:
    body: Any = "value"
    for key in reversed(path):
        body = {key: body}
    source = body.get("source", {}).get(path[1]) if len(path) > 2 else None
    if isinstance(source, dict):  # an update of a source carries what it requires
        source.update(
            {name: _REQUIRED_VALUES[name] for name in fields.PATCH_REQUIRES.get(path[1], ())}
        )
    with pytest.raises(ApiError) as refused:
        validate_pipe_update(body)
    assert refused.value.status == 400
    # The emulator names the field, or the create-time object holding it (a bigquery source).
    named = re.match(r"([\w.]+) is not an allowed field", refused.value.message)
    assert named, refused.value.message
    assert _dotted(path).startswith(named.group(1))
    assert path in EMULATOR_CREATE, f"{_dotted(path)}: create-time here, not in the create body"


def test_the_fields_sent_with_every_update_are_those_the_emulator_update_requires() -> None:
    required = {
        kind: tuple(
            p[2]
            for p, needed in EMULATOR_UPDATE.items()
            if needed and len(p) == 3 and p[:2] == ("source", kind)
        )
        for kind in fields.SOURCE_KINDS
    }
    assert {k: v for k, v in required.items() if v} == fields.PATCH_REQUIRES


def test_what_a_create_needs_covers_what_the_emulator_create_requires() -> None:
    for kind in fields.SOURCE_KINDS:
        theirs = {
            ".".join(p[2:])
            for p, needed in EMULATOR_CREATE.items()
            if needed and p[:2] == ("source", kind) and not fields.is_secret_path(p[:-1])
        }
        # A member required inside an optional object (an offset's strategy) is not a field
        # every create needs; the one authentication a pub/sub source has is filled in.
        theirs = {f for f in theirs if "." not in f or f in fields.REQUIRED_TO_CREATE[kind]}
        theirs -= {"settings"} | ({"authentication"} if kind == "pubsub" else set())
        assert theirs <= set(fields.REQUIRED_TO_CREATE[kind]), kind


def test_the_organization_update_of_the_emulator_takes_exactly_the_writable_fields() -> None:
    theirs = {p[0] for p, _ in _body_fields(ORGANIZATION_UPDATE.schema) if len(p) == 1}
    ours = {
        p[0]
        for p in field_paths(ORGANIZATION_FILE)
        if len(p) == 1 and facts(p, ORGANIZATION_FILE).writable
    }
    assert theirs == ours


# -- the annotations among themselves and the rest of the schema ------------------------------


def _annotated(node: Any, where: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, dict):
        if ANNOTATION in node:
            yield where, node
        for key, sub in node.items():
            yield from _annotated(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _annotated(sub, f"{where}/{i}")


@pytest.mark.parametrize("schema", [PIPE_FILE, ORGANIZATION_FILE])
def test_annotations_state_known_facts_and_never_both_writable_and_create_time(
    schema: str,
) -> None:
    found = list(_annotated(load_schemas()[schema]))
    assert found
    for where, node in found:
        note = node[ANNOTATION]
        assert set(note) <= _KNOWN_FACTS, where
        assert not (note.get("writable") and note.get("createTime")), where
        required = note.get("requiredToCreate", True)
        assert required is True or set(required) <= set(fields.SOURCE_KINDS), where


@pytest.mark.parametrize(
    "path", [p for p in LISTED if p[0] in ("source", "destination")], ids=_dotted
)
def test_every_source_and_destination_field_is_writable_or_create_time(path: Path) -> None:
    found = facts(path)
    assert found.writable or found.create_time, _dotted(path)


def _node(path: JsonPath) -> tuple[dict[str, Any], str]:
    """The schema node of a listed spec field (references followed)."""
    node, doc = _resolve(load_schemas()[PIPE_FILE]["$defs"]["spec"], PIPE_FILE)
    for key in path:
        node, doc = _resolve(_object(node, doc)[0]["properties"][key], _object(node, doc)[1])
    return node, doc


def _resolve(node: Mapping[str, Any], doc: str) -> tuple[dict[str, Any], str]:
    merged = dict(node)
    while "$ref" in merged:
        target, _, pointer = str(merged.pop("$ref")).partition("#")
        doc = target or doc
        found: Any = load_schemas()[doc]
        for part in [p for p in pointer.split("/") if p]:
            found = found[part]
        merged = {**found, **merged}
    return merged, doc


def _object(node: dict[str, Any], doc: str) -> tuple[dict[str, Any], str]:
    for alternative in node.get("anyOf", ()):
        if alternative.get("type") != "null":
            return _resolve(alternative, doc)
    return node, doc


def _is_reference(node: Mapping[str, Any]) -> bool:
    """Tell whether a schema node is the secret reference: ``{fromEnv}`` or ``{fromFile}``."""
    shapes = [set(a.get("properties", ())) for a in node.get("oneOf", ())]
    return bool(shapes) and all(s and s <= {"fromEnv", "fromFile", "allowEmpty"} for s in shapes)


def _only_references(node: dict[str, Any], doc: str) -> bool:
    """Tell whether every value a schema node accepts is a secret reference (or null)."""
    if _is_reference(node):
        return True
    alternatives = [*node.get("anyOf", ()), *node.get("oneOf", ())]
    if alternatives:
        return all(
            a.get("type") == "null" or _only_references(*_resolve(a, doc)) for a in alternatives
        )
    members = node.get("properties")
    return bool(members) and all(_only_references(*_resolve(m, doc)) for m in members.values())


@pytest.mark.parametrize("path", [p for p in LISTED if facts(p).sensitive], ids=_dotted)
def test_a_sensitive_field_takes_only_secret_references(path: Path) -> None:
    assert _only_references(*_node(path)), f"{_dotted(path)} takes a literal value"


@pytest.mark.parametrize(
    "path",
    [p for p in LISTED if facts(p).create_omits_null or facts(p).reset_sends_default],
    ids=_dotted,
)
def test_a_field_whose_null_is_special_accepts_null(path: Path) -> None:
    node = _node(path)[0]
    leaves = [_node((*path, m))[0] for m in node.get("properties", {})] or [node]
    for leaf in leaves:
        types = leaf.get("type", [])
        assert "null" in types or None in leaf.get("enum", ()), _dotted(path)


@pytest.mark.parametrize(
    "path", [p for p in LISTED if facts(p).sent_with_every_update], ids=_dotted
)
def test_a_field_sent_with_every_update_is_writable(path: Path) -> None:
    assert facts(path).writable


@pytest.mark.parametrize("path", [p for p in LISTED if len(p) > 2], ids=_dotted)
def test_the_schema_prose_agrees_with_the_annotations(path: Path) -> None:
    node, _ = _node(path)
    title = str(node.get("title", ""))
    if "(create-time" in title:
        assert fields.is_create_time_path(path), f"{_dotted(path)}: titled create-time"
    if re.search(r"\bWritable\b", str(node.get("description", ""))):
        assert fields.is_writable_pipe_path(path), f"{_dotted(path)}: described as writable"


def test_explain_says_what_a_create_needs_from_the_annotations() -> None:
    brokers = explain("Pipe.spec.source.kafka.brokers").access
    table = explain("Pipe.spec.destination.table").access
    assert brokers.startswith("create-time") and brokers.endswith("required to create the pipe")
    assert table.endswith("reading from kafka, objectStorage, kinesis, pubsub")
    assert "required" not in explain("Pipe.spec.source.kafka.consumerGroup").access


@pytest.mark.parametrize("kind", fields.SOURCE_KINDS)
def test_the_pipe_views_summarise_every_source_kind_from_its_listed_fields(kind: str) -> None:
    body = {str(p[2]): "x" for p in LISTED if len(p) == 3 and p[:2] == ("source", kind)}
    summary = source_summary({"source": {kind: body}})
    assert summary.startswith(kind) and "?" not in summary, summary


# -- sensitive fields never show in a plan -----------------------------------------------------


def _references(node: dict[str, Any], doc: str, name: str) -> Any:
    """A value of a secret field made of ``{fromEnv}`` references, one variable per member."""
    if _is_reference(node):
        return {"fromEnv": name}
    alternatives = [*node.get("anyOf", ()), *node.get("oneOf", ())]
    for alternative in alternatives:
        if alternative.get("type") != "null":
            return _references(*_resolve(alternative, doc), name)
    members = node.get("properties", {})
    return {
        m: _references(*_resolve(sub, doc), f"{name}_{m.upper()}") for m, sub in members.items()
    }


SECRETS = [("source", kind, *sub) for kind, subs in fields.SECRET_FIELDS.items() for sub in subs]


@pytest.mark.parametrize("path", SECRETS, ids=_dotted)
def test_no_secret_a_sensitive_field_holds_shows_in_a_plan(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _references(*_node(path), "CATALOGUE_SECRET")
    variables = re.findall(r'"fromEnv": "(\w+)"', json.dumps(value))
    for name in variables:
        monkeypatch.setenv(name, f"{name.lower()}-must-not-show")
    spec: Any = value
    for key in reversed(path):
        spec = {key: spec}
    resource = Resource("Pipe", "p", {**IDS, "name": "p", **spec}, "p.yaml")
    resolved = resolve_pipe_secrets(resource)
    secrets = SecretCheck(b"k" * 32, {})
    created = plan_create(resource, resolved, secrets, target=IDS)
    live = {"id": "pipe-1", "name": "p", "source": {path[1]: {}}}
    updated = plan_pipe(resource, resolved, Observed(live=live, path="/pipe-1"), secrets, ids=IDS)
    plan = Plan((created, updated))
    shown = render_text(plan) + render_markdown(plan) + planfile.dumps(plan)
    assert _dotted(path) in shown  # the plan says the secret is sent, never its value
    assert "must-not-show" not in shown
