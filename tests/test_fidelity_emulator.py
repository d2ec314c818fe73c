"""The emulator answers like the real service: the fieldMappings rule, the Kafka credential
shapes and authentication, the postgres TLS and object storage fields, ``null`` as "reset to
the default", and the response fields the real service returns (in-process, ASGI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconciler.emulator import EmulatorApp, Identities, create_app
from tests.seed_ids import KAFKA_PIPE
from tests.test_emulator_api import AUTH, Client, error, ok, patch, pipe_url


@pytest.fixture
def client() -> Iterator[Client]:
    """A client of a fresh in-process emulator, authenticated with the demo key."""
    app: EmulatorApp = create_app(identities=Identities.from_env({}))
    with Client(app, auth=AUTH) as test_client:
        yield test_client


def mappings(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"sourceField": s, "destinationField": d} for s, d in pairs]


FULL = mappings(("id", "id"), ("total", "amount"), ("ts", "created_at"), ("upd", "updated_at"))


# 1. fieldMappings: every destination column mapped, to existing columns only.


def test_seed_pipes_should_map_every_destination_column(client: Client) -> None:
    pipe = ok(client.get(pipe_url(KAFKA_PIPE)))
    columns = [c["name"] for c in pipe["destination"]["columns"]]
    assert sorted(m["destinationField"] for m in pipe["fieldMappings"]) == sorted(columns)


def test_field_mapping_to_a_missing_column_should_be_400_naming_it(client: Client) -> None:
    body = {"fieldMappings": [*FULL, {"sourceField": "x", "destinationField": "order_id"}]}
    message = error(patch(client, KAFKA_PIPE, body), 400)
    assert message.startswith("BAD_REQUEST: fieldMappings.4.destinationField")
    assert "order_id" in message and "not a column" in message


def test_field_mappings_leaving_a_column_out_should_be_400_naming_it(client: Client) -> None:
    message = error(patch(client, KAFKA_PIPE, {"fieldMappings": FULL[:2]}), 400)
    assert message.startswith("BAD_REQUEST: fieldMappings")
    assert "created_at" in message and "updated_at" in message and "not mapped" in message


def test_field_mappings_mapping_a_column_twice_should_be_400(client: Client) -> None:
    body = {"fieldMappings": [*FULL, {"sourceField": "id2", "destinationField": "id"}]}
    assert "mapped more than once" in error(patch(client, KAFKA_PIPE, body), 400)


def test_new_columns_without_their_mappings_should_be_400(client: Client) -> None:
    columns = [*ok(client.get(pipe_url(KAFKA_PIPE)))["destination"]["columns"]]
    columns.append({"name": "region", "type": "String"})
    message = error(patch(client, KAFKA_PIPE, {"destination": {"columns": columns}}), 400)
    assert "region" in message and "not mapped" in message


def test_complete_field_mappings_should_be_accepted(client: Client) -> None:
    assert ok(patch(client, KAFKA_PIPE, {"fieldMappings": FULL}))["fieldMappings"] == FULL
    columns = [{"name": "id", "type": "String"}, {"name": "region", "type": "String"}]
    both = {
        "destination": {"columns": columns},
        "fieldMappings": mappings(("id", "id"), ("region", "region")),
    }
    assert ok(patch(client, KAFKA_PIPE, both))["destination"]["columns"] == columns


def test_rejected_field_mappings_should_change_nothing(client: Client) -> None:
    before = ok(client.get(pipe_url(KAFKA_PIPE)))
    error(patch(client, KAFKA_PIPE, {"fieldMappings": FULL[:1], "name": "renamed"}), 400)
    assert ok(client.get(pipe_url(KAFKA_PIPE))) == before
