"""The emulator answers like the real service: the fieldMappings rule, the Kafka credential
shapes and authentication, the postgres TLS and object storage fields, ``null`` as "reset to
the default", and the response fields the real service returns (in-process, ASGI)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reconciler.emulator import EmulatorApp, Identities, create_app
from tests.support.emulator_app import AUTH, ORG, Client, error, ok, patch, pipe_url
from tests.support.seed_ids import (
    ANALYTICS,
    ENDPOINT_PROVISIONING,
    ENDPOINT_READY,
    KAFKA_PIPE,
    KINESIS_PIPE,
    OBJECT_STORAGE_PIPE,
    POSTGRES_PAUSED_PIPE,
    STAGING,
)


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


# 4. The response fields the real service returns, and null for an unset enum.


def test_sources_should_carry_type_format_and_authentication(client: Client) -> None:
    kafka = ok(client.get(pipe_url(KAFKA_PIPE)))["source"]["kafka"]
    assert (kafka["type"], kafka["format"], kafka["authentication"]) == (
        "kafka",
        "JSONEachRow",
        "PLAIN",
    )
    storage = ok(client.get(pipe_url(OBJECT_STORAGE_PIPE)))["source"]["objectStorage"]
    assert {"type", "format", "authentication"} <= set(storage)
    kinesis = ok(client.get(pipe_url(KINESIS_PIPE, STAGING)))["source"]["kinesis"]
    assert {"format", "authentication"} <= set(kinesis)
    postgres = ok(client.get(pipe_url(POSTGRES_PAUSED_PIPE)))["source"]["postgres"]
    assert postgres["type"] == "postgres"


def test_an_auto_scaled_pipe_should_report_concurrency_zero(client: Client) -> None:
    assert ok(client.get(pipe_url(KINESIS_PIPE, STAGING)))["scaling"]["concurrency"] == 0


def test_services_should_carry_scaling_provider_region_and_tier(client: Client) -> None:
    for service in ok(client.get(f"{ORG}/services")):
        assert {"currentScaling", "autoscalingMode", "provider", "region", "tier"} <= set(service)


def test_backups_should_carry_type_and_bucket_provider(client: Client) -> None:
    for backup in ok(client.get(f"{ORG}/services/{ANALYTICS}/backups")):
        assert backup["type"] in ("full", "incremental")
        assert backup["bucket"]["bucketProvider"]


def test_organization_private_endpoints_should_carry_cloud_provider_and_region(
    client: Client,
) -> None:
    (endpoint,) = ok(client.get(ORG))["privateEndpoints"]
    assert endpoint["cloudProvider"] and endpoint["region"]
    added = ok(
        client.patch(
            ORG, json={"privateEndpoints": {"add": [{"id": "pe-new", "description": "x"}]}}
        )
    )["privateEndpoints"]
    assert all(e["cloudProvider"] and e["region"] for e in added)
    # What was read can be sent back as the item to remove.
    removed = ok(client.patch(ORG, json={"privateEndpoints": {"remove": [endpoint]}}))
    assert [e["id"] for e in removed["privateEndpoints"]] == ["pe-new"]


def test_msk_fields_should_be_absent_from_an_endpoint_of_another_type(client: Client) -> None:
    base = f"{ORG}/services/{ANALYTICS}/pipesReversePrivateEndpoints"
    ready = ok(client.get(f"{base}/{ENDPOINT_READY}"))
    assert ready["type"] == "VPC_ENDPOINT_SERVICE"
    assert "mskAuthentication" not in ready and "mskClusterArn" not in ready
    assert ok(client.get(f"{base}/{ENDPOINT_PROVISIONING}"))["mskAuthentication"] == "SASL_IAM"


# 2. Kafka authentication and its four credential shapes; postgres TLS; object storage.

SHAPES = [
    ("PLAIN", {"username": "u", "password": "p"}),
    ("SCRAM-SHA-512", {"username": "u", "password": "p"}),
    ("IAM_USER", {"accessKeyId": "AKIAEXAMPLE", "secretKey": "s"}),
    ("PLAIN", {"connectionString": "Endpoint=sb://x/;SharedAccessKey=k"}),
    ("MUTUAL_TLS", {"certificate": "-----BEGIN CERTIFICATE-----", "privateKey": "-----BEGIN"}),
]


@pytest.mark.parametrize(
    ("method", "credentials"), SHAPES, ids=[s[0] + "-" + next(iter(s[1])) for s in SHAPES]
)
def test_kafka_authentication_and_credentials_should_change_in_one_patch(
    client: Client, method: str, credentials: dict[str, str]
) -> None:
    body = {"source": {"kafka": {"authentication": method, "credentials": credentials}}}
    kafka = ok(patch(client, KAFKA_PIPE, body))["source"]["kafka"]
    assert kafka["authentication"] == method and "credentials" not in kafka


def test_switching_authentication_without_fitting_credentials_should_be_400(
    client: Client,
) -> None:
    body = {"source": {"kafka": {"authentication": "IAM_USER"}}}
    assert "credentials are required" in error(patch(client, KAFKA_PIPE, body), 400)
    wrong = {"source": {"kafka": {"authentication": "IAM_USER", "credentials": SHAPES[0][1]}}}
    assert "do not fit authentication IAM_USER" in error(patch(client, KAFKA_PIPE, wrong), 400)


def test_credentials_of_no_known_shape_should_be_400_naming_the_shapes(client: Client) -> None:
    body = {"source": {"kafka": {"credentials": {"token": "x"}}}}
    assert "{certificate, privateKey}" in error(patch(client, KAFKA_PIPE, body), 400)
    partial = {"source": {"kafka": {"credentials": {"username": "u"}}}}
    assert "credentials.password is required" in error(patch(client, KAFKA_PIPE, partial), 400)


def test_postgres_tls_fields_should_be_written_and_read_back(client: Client) -> None:
    tls = {"tlsHost": "db.internal", "caCertificate": "PEM", "disableTls": False}
    body = {"source": {"postgres": {**tls, "skipCertVerification": True}}}
    postgres = ok(patch(client, POSTGRES_PAUSED_PIPE, body))["source"]["postgres"]
    assert {k: postgres[k] for k in tls} == tls and postgres["skipCertVerification"] is True


def test_object_storage_fields_should_be_written_and_the_key_never_read_back(
    client: Client,
) -> None:
    body = {"source": {"objectStorage": {"startAfter": "a/b.json", "serviceAccountKey": "eyJ9"}}}
    storage = ok(patch(client, OBJECT_STORAGE_PIPE, body))["source"]["objectStorage"]
    assert storage["startAfter"] == "a/b.json" and "serviceAccountKey" not in storage
    both = {"source": {"objectStorage": {"skipInitialLoad": True}}}
    assert "startAfter cannot be provided" in error(patch(client, OBJECT_STORAGE_PIPE, both), 400)


# 3. null resets a field to the service's default.


def test_null_should_reset_settings_and_source_fields_to_their_defaults(client: Client) -> None:
    patch(client, KAFKA_PIPE, {"settings": {"engine_max_threads": 12}})
    body = {
        "settings": {"engine_max_threads": None, "streaming_max_insert_wait_ms": None},
        "source": {"kafka": {"iamRole": None, "caCertificate": None}},
    }
    pipe = ok(patch(client, KAFKA_PIPE, body))
    assert pipe["settings"]["engine_max_threads"] == 0
    assert pipe["settings"]["streaming_max_insert_wait_ms"] == 5000
    assert pipe["source"]["kafka"]["iamRole"] is None


def test_null_on_a_field_the_pipe_cannot_lack_should_change_nothing(client: Client) -> None:
    # The contract types these nullable; the pipe cannot be without them, so null keeps them.
    before = ok(client.get(pipe_url(KAFKA_PIPE)))
    assert ok(patch(client, KAFKA_PIPE, {"name": None, "source": None}))["name"] == before["name"]
    body = {"source": {"postgres": {"port": None, "host": None}}}
    postgres = ok(patch(client, POSTGRES_PAUSED_PIPE, body))["source"]["postgres"]
    assert (postgres["port"], postgres["host"]) == (5432, "db.example.com")


def test_null_on_an_optional_field_should_remove_it_not_store_null(client: Client) -> None:
    tls = {"source": {"postgres": {"tlsHost": "db.internal", "caCertificate": "PEM"}}}
    assert ok(patch(client, POSTGRES_PAUSED_PIPE, tls))["source"]["postgres"]["tlsHost"]
    reset = {"source": {"postgres": {"tlsHost": None, "caCertificate": None}}}
    postgres = ok(patch(client, POSTGRES_PAUSED_PIPE, reset))["source"]["postgres"]
    assert "tlsHost" not in postgres and "caCertificate" not in postgres
