"""export's secret hints are derived from the one secret-field list and the pipe schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from reconciler.inventory.secrethints import secret_hints
from reconciler.model.fields import KAFKA_CREDENTIAL_SHAPES, SECRET_FIELDS


def parsed(line: str) -> dict[str, object]:
    """Parse a hint line (comment dropped) as the YAML a user would paste."""
    loaded = YAML(typ="safe").load(line.split("   #")[0])
    assert isinstance(loaded, dict)
    return loaded


def references(value: object) -> list[dict[str, str]]:
    """Return every secret reference in a hinted value."""
    if isinstance(value, dict) and set(value) <= {"fromEnv", "fromFile"}:
        return [value]
    assert isinstance(value, dict)
    return [ref for member in value.values() for ref in references(member)]


@pytest.mark.parametrize("kind", sorted(k for k in SECRET_FIELDS if k != "kafka"))
def test_each_secret_field_of_a_source_kind_gets_one_hint_of_references(kind: str) -> None:
    hints = [parsed(line) for line in secret_hints(kind, {}, "ORDERS", "orders")]
    assert [(next(iter(h)),) for h in hints] == list(SECRET_FIELDS[kind])
    for hint in hints:
        refs = references(next(iter(hint.values())))
        assert refs and all(r.get("fromEnv", "").startswith("ORDERS_") for r in refs)


@pytest.mark.parametrize("method", sorted(KAFKA_CREDENTIAL_SHAPES))
def test_kafka_hints_follow_the_shapes_of_the_authentication_method(method: str) -> None:
    lines = secret_hints("kafka", {"authentication": method}, "ORDERS", "orders")
    shapes = [frozenset(parsed(line)["credentials"]) for line in lines]  # type: ignore[arg-type]
    assert shapes == list(KAFKA_CREDENTIAL_SHAPES[method])


def test_key_material_of_mutual_tls_is_referenced_as_files() -> None:
    (line,) = secret_hints("kafka", {"authentication": "MUTUAL_TLS"}, "ORDERS", "orders")
    assert parsed(line) == {
        "credentials": {
            "certificate": {"fromFile": "orders.crt"},
            "privateKey": {"fromFile": "orders.key"},
        }
    }


REGISTRY = {"url": "https://registry.example.com", "authentication": "PLAIN"}


def test_a_registry_that_authenticates_gets_a_credentials_hint_when_exported_by_name() -> None:
    source = {"authentication": "PLAIN", "schemaRegistry": REGISTRY}
    lines = secret_hints("kafka", source, "ORDERS", "orders", create_time=True)
    (line,) = [line for line in lines if "schemaRegistry" in line]
    assert parsed(line) == {
        "credentials": {
            "username": {"fromEnv": "ORDERS_SCHEMA_REGISTRY_USERNAME"},
            "password": {"fromEnv": "ORDERS_SCHEMA_REGISTRY_PASSWORD"},
        }
    }
    assert line.endswith("# inside schemaRegistry (needed to create the pipe)")


@pytest.mark.parametrize(
    ("registry", "create_time"),
    [(REGISTRY, False), ({"url": "https://registry.example.com"}, True), (None, True)],
    ids=["not-exported", "no-authentication", "no-registry"],
)
def test_no_registry_hint_without_an_exported_registry_that_authenticates(
    registry: dict[str, str] | None, create_time: bool
) -> None:
    source = {"authentication": "PLAIN", **({"schemaRegistry": registry} if registry else {})}
    lines = secret_hints("kafka", source, "ORDERS", "orders", create_time=create_time)
    assert not [line for line in lines if "schemaRegistry" in line]


def test_export_by_name_of_a_pipe_whose_registry_authenticates_hints_its_credentials() -> None:
    from reconciler.inventory.documents import pipe_document
    from reconciler.inventory.export import render_document

    live = {
        "id": "p-1",
        "name": "orders",
        "source": {
            "kafka": {
                "type": "kafka",
                "format": "AvroConfluent",
                "brokers": "b:9092",
                "topics": "orders",
                "authentication": "PLAIN",
                "schemaRegistry": REGISTRY,
            }
        },
    }
    by_name = pipe_document(live, "org", "svc", "orders", with_expectations=False, by_name="main")
    text = render_document(by_name, Path("orders.yaml"))
    assert "ORDERS_SCHEMA_REGISTRY_PASSWORD" in text and "inside schemaRegistry" in text
    by_id = pipe_document(live, "org", "svc", "orders", with_expectations=False)
    assert "SCHEMA_REGISTRY" not in render_document(by_id, Path("orders.yaml"))
