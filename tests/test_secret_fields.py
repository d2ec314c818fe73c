"""One list of secret fields (``reconciler.model.fields.SECRET_FIELDS``): the spec-path test, the
schema's message hiding, the read-only views' redaction and the resolver all follow it, and a
resolved ``Secret`` or a reference is recognised wherever it sits."""

from __future__ import annotations

import pytest

from reconciler.inventory.reads import redact_secrets
from reconciler.load.schemaerrors import _secret
from reconciler.model.fields import (
    REDACTED_KEYS,
    SECRET_FIELD_NAMES,
    SECRET_FIELDS,
    is_secret_path,
)
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.secrets import REDACTED, Secret, holds_secret, secret_paths

EVERY_SECRET = [(kind, sub) for kind, subs in SECRET_FIELDS.items() for sub in subs]


def _nested(sub: tuple[str | int, ...], leaf: object) -> object:
    """A mapping holding ``leaf`` at the path ``sub``."""
    for key in reversed(sub):
        leaf = {key: leaf}
    return leaf


@pytest.mark.parametrize(("kind", "sub"), EVERY_SECRET)
def test_every_listed_secret_is_a_secret_path_inside_and_out(kind: str, sub: JsonPath) -> None:
    assert is_secret_path(("source", kind, *sub))
    assert is_secret_path(("source", kind, *sub, "password"))


@pytest.mark.parametrize(
    "path",
    [
        ("source", "kafka", "topics"),
        ("source", "kinesis", "credentials"),
        ("source", "postgres", "accessKey"),
        ("destination", "credentials", "x"),
        ("source", "kafka"),
        ("source", "kafka", "schemaRegistry"),
        ("source", "kafka", "schemaRegistry", "url"),
    ],
)
def test_fields_outside_the_list_are_not_secret(path: tuple[str, ...]) -> None:
    assert not is_secret_path(path)


@pytest.mark.parametrize(("kind", "sub"), EVERY_SECRET)
def test_schema_messages_hide_every_listed_secret(kind: str, sub: JsonPath) -> None:
    assert _secret(("spec", "source", kind, *sub))
    assert not _secret(("spec", "source", kind, *sub, "fromEnv"))


@pytest.mark.parametrize(("kind", "sub"), EVERY_SECRET)
def test_the_resolver_visits_every_listed_secret(kind: str, sub: JsonPath) -> None:
    spec = {"source": {kind: _nested(sub, {"fromEnv": "X"})}}
    resource = Resource("Pipe", "p", spec, "p.yaml")
    assert list(secret_paths(resource)) == [("source", kind, *sub)]


def test_views_redact_every_secret_field_and_secret_member() -> None:
    assert SECRET_FIELD_NAMES <= REDACTED_KEYS
    live = {name: "value" for name in REDACTED_KEYS} | {"name": "kept", "username": "kept"}
    redacted = redact_secrets({"source": {"kafka": live}})
    assert redacted["source"]["kafka"] == {
        **{name: REDACTED for name in REDACTED_KEYS},
        "name": "kept",
        "username": "kept",
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Secret("x"), True),
        ({"fromEnv": "X"}, True),
        ({"fromFile": "x.txt"}, True),
        ({"username": {"fromEnv": "U"}, "password": {"fromEnv": "P"}}, True),
        ({"nested": {"deeper": Secret("x")}}, True),
        ({"iamRole": "arn"}, False),
        ("plain", False),
        (["fromEnv"], False),
    ],
)
def test_holds_secret_recognises_secrets_and_references_at_any_depth(
    value: object, expected: bool
) -> None:
    assert holds_secret(value) is expected
