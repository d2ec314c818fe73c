"""The emulator takes the bodies the management contract allows and refuses the others.

Each request body sent here as valid is first checked against the contract (so the test itself
cannot drift from it), and each answer is checked too. Covered: the source kinds beyond the
seed's (mysql, mongodb, bigquery, pubsub) through create, read, patch, state and delete; an
object storage pipe without field mappings; postgres settings and mapping fields; the
organization's ``enableCoreDumps``; object storage ``PUBLIC`` refused with its hint; kinesis
authentication changed by a patch.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.contract_exchange import body_errors, exchange
from tests.support.emulator_app import (
    DESTINATION,
    SOURCES,
    TRANSITION_MS,
    Client,
    Clock,
    error,
    ok,
)
from tests.support.seed_ids import ANALYTICS, KINESIS_PIPE, OBJECT_STORAGE_PIPE, STAGING

ORG = "/v1/organizations/{organizationId}"
PIPES = ORG + "/services/{serviceId}/pipes"
PIPE = PIPES + "/{pipeId}"
STATE = PIPE + "/state"

NEW_KINDS: dict[str, dict[str, Any]] = {
    "mysql": {
        "type": "auroramysql",
        "host": "mysql.example.com",
        "port": 3306,
        "credentials": {"username": "u", "password": "mysql-secret"},
        "settings": {"replicationMode": "cdc", "replicationMechanism": "GTID"},
        "tableMappings": [
            {
                "sourceSchemaName": "shop",
                "sourceTable": "orders",
                "targetTable": "orders",
                "partitionKey": "id",
            }
        ],
    },
    "mongodb": {
        "uri": "mongodb+srv://cluster0.example.net",
        "readPreference": "secondaryPreferred",
        "credentials": {"username": "u", "password": "mongo-secret"},
        "settings": {"replicationMode": "cdc", "useJsonNativeFormat": True},
        "tableMappings": [
            {"sourceDatabaseName": "shop", "sourceCollection": "carts", "targetTable": "carts"}
        ],
    },
    "bigquery": {
        "snapshotStagingPath": "gs://staging-bucket/snapshots/",
        "settings": {"replicationMode": "snapshot"},
        "credentials": {"serviceAccountFile": "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0="},
        "tableMappings": [
            {"sourceDatasetName": "sales", "sourceTable": "invoices", "targetTable": "invoices"}
        ],
    },
    "pubsub": {
        "format": "JSONEachRow",
        "projectId": "acme-prod",
        "topic": "orders",
        "authentication": "SERVICE_ACCOUNT",
        "seekType": "earliest",
        "serviceAccountKey": {"serviceAccountFile": "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0="},
    },
}
SECRETS = {"mysql": "credentials", "mongodb": "credentials", "bigquery": "credentials"}
SECRETS["pubsub"] = "serviceAccountKey"


def create_body(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    """A create body the contract allows (asserted), with a destination fitting the kind."""
    destination = copy.deepcopy(DESTINATION)
    if kind in ("postgres", "mysql", "mongodb", "bigquery"):
        destination = {"database": "replica"}
    body = {"name": f"new-{kind}", "source": {kind: source}, "destination": destination}
    assert body_errors("POST", PIPES, body) == []
    return body


def create(client: Client, kind: str, source: dict[str, Any]) -> dict[str, Any]:
    """Create a pipe on the analytics service; its answer is checked against the contract."""
    body = create_body(kind, source)
    pipe: dict[str, Any] = ok(exchange(client, "POST", PIPES, body, serviceId=ANALYTICS))
    return pipe


@pytest.mark.parametrize("kind", list(NEW_KINDS))
def test_each_new_source_kind_should_be_created_read_stopped_and_deleted(
    client: Client, clock: Clock, kind: str
) -> None:
    pipe = create(client, kind, NEW_KINDS[kind])
    source = pipe["source"][kind]
    assert pipe["state"] == "Provisioning" and SECRETS[kind] not in source
    ids = {"serviceId": ANALYTICS, "pipeId": pipe["id"]}
    clock.advance(TRANSITION_MS)
    read = ok(exchange(client, "GET", PIPE, **ids))
    assert read["state"] == "Running" and read["source"] == pipe["source"]
    stopped = ok(exchange(client, "PATCH", STATE, {"command": "stop"}, **ids))
    database = kind != "pubsub"
    assert stopped["state"] == ("Pausing" if database else "Stopping")
    clock.advance(TRANSITION_MS)
    assert ok(exchange(client, "GET", PIPE, **ids))["state"] == (
        "Paused" if database else "Stopped"
    )
    ok(exchange(client, "DELETE", PIPE, **ids))
    assert error(exchange(client, "GET", PIPE, **ids), 404)


def test_database_kinds_should_read_back_with_their_defaults(client: Client) -> None:
    mysql = create(client, "mysql", NEW_KINDS["mysql"])["source"]["mysql"]
    assert mysql["settings"]["replicationMode"] == "cdc"
    assert mysql["tableMappings"][0]["tableEngine"] == "ReplacingMergeTree"
    assert "tlsHost" not in mysql and mysql["authentication"] == "basic"
    mongodb = create(client, "mongodb", NEW_KINDS["mongodb"])["source"]["mongodb"]
    assert mongodb["settings"]["useJsonNativeFormat"] is True
    bigquery = create(client, "bigquery", NEW_KINDS["bigquery"])["source"]["bigquery"]
    assert bigquery["settings"]["replicationMode"] == "snapshot"


def test_a_paused_mysql_pipe_should_take_table_mapping_edits_by_key(
    client: Client, clock: Clock
) -> None:
    pipe = create(client, "mysql", NEW_KINDS["mysql"])
    ids = {"serviceId": ANALYTICS, "pipeId": pipe["id"]}
    add = {"sourceSchemaName": "shop", "sourceTable": "items", "targetTable": "items"}
    body = {"source": {"mysql": {"host": None, "port": None, "tableMappingsToAdd": [add]}}}
    assert "MySQL pipe must be paused to edit" in error(
        exchange(client, "PATCH", PIPE, body, **ids), 400
    )
    exchange(client, "PATCH", STATE, {"command": "stop"}, **ids)
    clock.advance(TRANSITION_MS)
    mysql = ok(exchange(client, "PATCH", PIPE, body, **ids))["source"]["mysql"]
    assert [m["targetTable"] for m in mysql["tableMappings"]] == ["orders", "items"]
    assert mysql["host"] == "mysql.example.com"  # null: unchanged


@pytest.mark.parametrize(
    ("kind", "patch", "expected"),
    [
        ("mongodb", {"uri": None, "readPreference": "nearest", "tlsHost": "m.internal"}, None),
        ("pubsub", {"authentication": "SERVICE_ACCOUNT", "serviceAccountKey": None}, None),
        ("pubsub", {"ackDeadline": 60}, "source.pubsub.authentication is required"),
        ("bigquery", {}, "source.bigquery is not an allowed field"),
        ("mysql", {"settings": {"syncIntervalSeconds": 30}}, "source.mysql.host is required"),
    ],
)
def test_a_new_kinds_source_should_be_patched_as_the_contract_says(
    client: Client, kind: str, patch: dict[str, Any], expected: str | None
) -> None:
    pipe = create(client, kind, NEW_KINDS[kind])
    ids = {"serviceId": ANALYTICS, "pipeId": pipe["id"]}
    response = exchange(client, "PATCH", PIPE, {"source": {kind: patch}}, **ids)
    if expected is None:
        source = ok(response)["source"][kind]
        assert {k: v for k, v in patch.items() if v is not None}.items() <= source.items()
    else:
        assert expected in error(response, 400)


def test_pubsub_should_need_a_seek_timestamp_exactly_for_seek_type_timestamp(
    client: Client,
) -> None:
    body = create_body("pubsub", {**NEW_KINDS["pubsub"], "seekType": "timestamp"})
    message = error(exchange(client, "POST", PIPES, body, serviceId=ANALYTICS), 400)
    assert message == (
        "BAD_REQUEST: source.pubsub.seekTimestamp is required for seekType timestamp"
    )
    timed = {
        **NEW_KINDS["pubsub"],
        "seekType": "timestamp",
        "seekTimestamp": "2024-03-01T00:00:00Z",
    }
    assert create(client, "pubsub", timed)["source"]["pubsub"]["seekTimestamp"]


def test_an_object_storage_pipe_should_be_created_without_field_mappings(client: Client) -> None:
    source = {"type": "s3", "format": "JSONEachRow", "url": "https://bucket.example.com/*.json"}
    pipe = create(client, "objectStorage", source)
    assert pipe["fieldMappings"] == [] and pipe["destination"]["managedTable"] is True
    storage = pipe["source"]["objectStorage"]
    assert "authentication" not in storage  # a public bucket: no method at all


@pytest.mark.parametrize("where", ["create", "patch"])
def test_object_storage_public_should_be_refused_with_the_way_to_read_a_public_bucket(
    client: Client, where: str
) -> None:
    if where == "create":
        source = {**SOURCES["objectStorage"], "authentication": "PUBLIC"}
        del source["accessKey"]
        body: dict[str, Any] = {"name": "p", "source": {"objectStorage": source}}
        body["destination"] = DESTINATION
        response = exchange(client, "POST", PIPES, body, serviceId=ANALYTICS)
    else:
        body = {"source": {"objectStorage": {"authentication": "PUBLIC"}}}
        response = exchange(
            client, "PATCH", PIPE, body, serviceId=ANALYTICS, pipeId=OBJECT_STORAGE_PIPE
        )
    message = error(response, 400)
    assert "authentication must be one of IAM_ROLE, IAM_USER" in message
    assert "leave authentication and credentials out to read a public bucket" in message


def test_postgres_should_take_delete_on_merge_replication_mode_and_partitioning(
    client: Client,
) -> None:
    source = copy.deepcopy(SOURCES["postgres"])
    source["settings"] = {"deleteOnMerge": True, "replicationMode": "cdc_only"}
    source["tableMappings"][0].update(partitionKey="id", partitionByExpr="toYYYYMM(created_at)")
    postgres = create(client, "postgres", source)["source"]["postgres"]
    assert postgres["settings"]["deleteOnMerge"] is True
    assert postgres["settings"]["replicationMode"] == "cdc_only"
    assert postgres["tableMappings"][0]["partitionByExpr"] == "toYYYYMM(created_at)"
    assert "tlsHost" not in postgres and "caCertificate" not in postgres


def test_organization_should_take_enable_core_dumps(client: Client) -> None:
    org = ok(exchange(client, "PATCH", ORG, {"enableCoreDumps": True}))
    assert org["enableCoreDumps"] is True
    assert ok(exchange(client, "GET", ORG))["enableCoreDumps"] is True
    message = error(exchange(client, "PATCH", ORG, {"enableCoreDumps": "yes"}), 400)
    assert message == "BAD_REQUEST: enableCoreDumps must be a boolean"


def test_kinesis_authentication_should_change_by_patch_with_its_credential(
    client: Client,
) -> None:
    ids = {"serviceId": STAGING, "pipeId": KINESIS_PIPE}
    alone = {"source": {"kinesis": {"authentication": "IAM_USER"}}}
    assert "accessKey is required" in error(exchange(client, "PATCH", PIPE, alone, **ids), 400)
    key = {"accessKeyId": "AKIAEXAMPLE", "secretKey": "kinesis-secret"}
    both = {"source": {"kinesis": {"authentication": "IAM_USER", "accessKey": key}}}
    kinesis = ok(exchange(client, "PATCH", PIPE, both, **ids))["source"]["kinesis"]
    assert kinesis["authentication"] == "IAM_USER" and "accessKey" not in kinesis
