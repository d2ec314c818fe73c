"""The schema files read as a tree (``reconciler.model.schematree``), the one walk behind
``reconcile explain``, the field catalogue and the reference pages: ``$ref``s followed across
files with the referring node's own keys winning, members found through list items, maps and
``oneOf``/``anyOf`` alternatives, and types named as each reader shows them."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.schematree import (
    COMMON_FILE,
    Values,
    child,
    document,
    members,
    resolve,
    type_name,
)

PIPE = "pipe.schema.json"
DASHBOARD = "dashboard.schema.json"


@pytest.mark.parametrize(
    ("node", "doc", "expected_doc", "expected"),
    [
        # within the file: the pipe's spec is its own $defs/spec
        ({"$ref": "#/$defs/spec"}, PIPE, PIPE, {"title": "Pipe spec"}),
        # across files, then on from the target's file: common's organizationId refers to its
        # own #/$defs/uuid (not the pipe's); the nearer title wins, the pattern comes from uuid
        (
            {"$ref": "common.schema.json#/$defs/organizationId", "x-reconcile": {"identity": True}},
            PIPE,
            COMMON_FILE,
            {
                "title": "Organization ID",
                "type": "string",
                "x-reconcile": {"identity": True},
                "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                "[0-9a-fA-F]{12}$",
            },
        ),
        # the referring node's own keys win over the definition's
        (
            {"$ref": "#/$defs/stringMap", "title": "Labels", "description": "Mine."},
            COMMON_FILE,
            COMMON_FILE,
            {"title": "Labels", "description": "Mine.", "additionalProperties": {"type": "string"}},
        ),
        # a node without $ref is itself, in its own file
        ({"type": "integer", "minimum": 0}, PIPE, PIPE, {"type": "integer", "minimum": 0}),
    ],
)
def test_resolve_follows_refs_across_files_with_the_referring_nodes_own_keys_winning(
    node: dict[str, Any], doc: str, expected_doc: str, expected: dict[str, Any]
) -> None:
    resolved, resolved_doc = resolve(node, doc)
    assert resolved_doc == expected_doc
    assert "$ref" not in resolved
    assert {key: resolved.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("doc", "path", "expected_doc", "title", "type_shown"),
    [
        # a oneOf of source kinds, then a definition in the same file
        (PIPE, ("spec", "source", "kafka", "topics"), PIPE, "Topics (create-time)", "string"),
        # a oneOf of credential forms in the common file, each a secret reference's oneOf
        (
            PIPE,
            ("spec", "source", "kafka", "credentials", "privateKey"),
            COMMON_FILE,
            "Private key",
            "{fromEnv: NAME} or {fromFile: PATH}",
        ),
        # a list's members are its items'
        (DASHBOARD, ("spec", "tiles", "series", "type"), DASHBOARD, "Series type", "enum"),
        # a map's values: any key of labels is a string
        (PIPE, ("metadata", "labels", "team"), COMMON_FILE, "", "string"),
    ],
)
def test_child_walks_through_alternatives_lists_and_maps(
    doc: str, path: tuple[str, ...], expected_doc: str, title: str, type_shown: str
) -> None:
    node, node_doc = resolve(document(doc), doc)
    for name in path:
        found = child(node, node_doc, name)
        assert found is not None, name
        node, node_doc = found
    assert node_doc == expected_doc
    assert node.get("title", "") == title
    assert type_name(node, node_doc) == type_shown


@pytest.mark.parametrize(
    ("doc", "path", "missing"),
    [
        (PIPE, ("spec",), "setings"),
        (PIPE, ("spec", "source", "kafka"), "password"),  # a member of credentials, not of kafka
        (COMMON_FILE, ("$defs", "metadata"), "team"),  # metadata takes no other key
    ],
)
def test_child_is_none_for_a_name_the_node_does_not_list(
    doc: str, path: tuple[str, ...], missing: str
) -> None:
    node: Any = document(doc)
    for name in path:
        node = node["properties"][name] if "properties" in node else node[name]
        node, doc = resolve(node, doc)
    assert child(node, doc, missing) is None


def test_members_list_the_nodes_own_then_each_alternatives_the_first_listing_winning() -> None:
    node = {
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a"],
        "oneOf": [
            {"properties": {"b": {"type": "boolean"}, "c": {"$ref": "#/$defs/uuid"}}},
            {"properties": {"d": {"type": "null"}}, "required": ["d"]},
        ],
        "anyOf": [{"$ref": "#/$defs/stringMap"}],
    }
    found = members(node, COMMON_FILE)
    assert list(found) == ["a", "b", "c", "d"]
    assert found["b"].node == {"type": "integer"}
    assert found["c"].node["title"] == "UUID" and found["c"].doc == COMMON_FILE
    # d is required by one alternative only: not of every value
    assert [found[name].required for name in found] == [True, False, False, False]


def test_members_of_kafka_credentials_are_each_forms_fields_in_schema_order() -> None:
    node, doc = resolve({"$ref": "common.schema.json#/$defs/kafkaCredentials"}, PIPE)
    found = members(node, doc)
    assert list(found) == [
        "username",
        "password",
        "accessKeyId",
        "secretKey",
        "connectionString",
        "certificate",
        "privateKey",
    ]
    assert all(member.doc == COMMON_FILE for member in found.values())


@pytest.mark.parametrize(
    ("node", "brief", "spelled", "below"),
    [
        ({"type": "integer"}, "integer", "integer", "integer"),
        ({"type": ["integer", "null"]}, "integer or null", "integer or null", "integer or null"),
        ({"type": "object"}, "mapping", "mapping", "mapping"),
        ({"type": "array", "items": {"type": "string"}}, *["list of string"] * 3),
        (
            {"type": "array", "items": {"$ref": "#/$defs/uuid"}},
            *["list of string"] * 3,
        ),
        (
            {"enum": ["a", None]},
            "enum",
            "one of a, null",
            "one of the values below",
        ),
        # a list's items never have a VALUES line of their own: their values are spelled out
        (
            {"type": "array", "items": {"enum": ["x", "y"]}},
            "list of enum",
            "list of one of x, y",
            "list of one of x, y",
        ),
        ({"const": 1}, "constant", "the constant 1", "the constant 1"),
        (
            {"oneOf": [{"$ref": "#/$defs/credentials"}, {"title": "B"}], "anyOf": [{}]},
            *["Credentials or B or any"] * 3,
        ),
        # an alternative without a title is named by its type (a nullable object: "or null")
        (
            {"anyOf": [{"$ref": "#/$defs/accessKey"}, {"type": "null"}]},
            *["Access key or null"] * 3,
        ),
        ({}, "any", "any", "any"),
    ],
)
def test_type_name_shows_values_as_each_reader_asks(
    node: dict[str, Any], brief: str, spelled: str, below: str
) -> None:
    shown = [type_name(node, COMMON_FILE, values) for values in Values]
    assert shown == [brief, spelled, below]


@pytest.mark.parametrize(
    ("node", "doc", "required"),
    [
        # one of four credential forms: no member is required of every value
        ({"$ref": "common.schema.json#/$defs/kafkaCredentials"}, PIPE, []),
        # a secret reference is {fromEnv} or {fromFile}, never both
        ({"$ref": "#/$defs/secret"}, COMMON_FILE, []),
        # a nullable object: given at all, it needs both members
        (
            {"anyOf": [{"$ref": "#/$defs/accessKey"}, {"type": "null"}]},
            COMMON_FILE,
            ["accessKeyId", "secretKey"],
        ),
        # the node's own, an allOf part's, and what every alternative requires
        (
            {
                "properties": {name: {} for name in "abcde"},
                "required": ["a"],
                "allOf": [{"required": ["b"]}],
                "oneOf": [{"required": ["c", "d"]}, {"required": ["c", "e"]}],
            },
            COMMON_FILE,
            ["a", "b", "c"],
        ),
    ],
)
def test_a_member_is_required_when_every_value_of_the_node_must_state_it(
    node: dict[str, Any], doc: str, required: list[str]
) -> None:
    resolved, resolved_doc = resolve(node, doc)
    found = members(resolved, resolved_doc)
    assert found, "the node has members"
    assert [name for name, member in found.items() if member.required] == required
