"""The emulator's pipe lifecycle extensions in-process: create, delete, state commands, scaling.

Covers each create-time validation rule (one row per rule, with the real error body), the
inferred required fields per source kind, the state machine's transitions (driven by the
store's clock, never by sleeping), the no-op commands, scaling bounds and defaults, and that a
``specOnly`` emulator refuses every new operation exactly like an unknown route.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.emulator import EmulatorApp, EmulatorConfig, Identities, create_app
from tests.support.emulator import start_emulator, stop_emulator
from tests.support.emulator_app import (
    AUTH,
    DESTINATION,
    MAPPINGS,
    SOURCES,
    TRANSITION_MS,
    Client,
    Clock,
    error,
    make_app,
    ok,
)
from tests.support.seed_ids import ANALYTICS, ARCHIVE, KAFKA_PIPE, ORG_ID, POSTGRES_PAUSED_PIPE

PIPES = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes"


def body_of(kind: str, **top: Any) -> dict[str, Any]:
    """A valid create body of that source kind (deep copy: rows may mutate it)."""
    body: dict[str, Any] = {
        "name": f"new-{kind}",
        "source": {kind: copy.deepcopy(SOURCES[kind])},
        "destination": copy.deepcopy(DESTINATION),
        "fieldMappings": copy.deepcopy(MAPPINGS),
    }
    body.update(top)
    return body


def create(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    """POST a pipe and return it (asserting a 200)."""
    result: dict[str, Any] = ok(client.post(PIPES, json=body))
    return result


def state_of(client: Client, pipe_id: str) -> str:
    """The pipe's state as GET shows it."""
    state: str = ok(client.get(f"{PIPES}/{pipe_id}"))["state"]
    return state


def command(client: Client, pipe_id: str, name: str) -> str:
    """Send a state command; the state in the answer."""
    state: str = ok(client.patch(f"{PIPES}/{pipe_id}/state", json={"command": name}))["state"]
    return state


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_create_should_answer_the_new_pipe_provisioning_with_defaults_and_no_secret(
    client: Client, kind: str
) -> None:
    pipe = create(client, body_of(kind))
    assert uuid.UUID(pipe["id"]).version == 4
    assert pipe["serviceId"] == ANALYTICS and pipe["name"] == f"new-{kind}"
    assert pipe["state"] == "Provisioning"
    assert pipe["createdAt"] == pipe["updatedAt"] == "2026-01-01T00:00:00.000Z"
    assert pipe["scaling"] == {
        "replicas": 1,
        "replicaCpuMillicores": 125,
        "replicaMemoryGb": 0.5,
        "concurrency": 0,
    }
    assert pipe["settings"]["engine_max_threads"] == 0
    assert pipe["destination"]["tableDefinition"] == {"engine": {"type": "MergeTree"}}
    assert "secret" not in str(pipe)
    assert ok(client.get(f"{PIPES}/{pipe['id']}")) == pipe
    assert pipe["id"] in [p["id"] for p in ok(client.get(PIPES))]


def test_created_source_should_carry_the_service_defaults_per_kind(client: Client) -> None:
    kafka = create(client, body_of("kafka"))["source"]["kafka"]
    assert kafka["offset"] == {"strategy": "from_beginning"}
    assert kafka["consumerGroup"].startswith("pipe-") and kafka["exactlyOnce"] is False
    storage = create(client, body_of("objectStorage"))["source"]["objectStorage"]
    assert (storage["compression"], storage["isContinuous"]) == ("auto", False)
    kinesis = create(client, body_of("kinesis"))["source"]["kinesis"]
    assert (kinesis["authentication"], kinesis["iteratorType"]) == ("IAM_ROLE", "TRIM_HORIZON")
    postgres = create(client, body_of("postgres"))["source"]["postgres"]
    assert postgres["authentication"] == "basic" and postgres["settings"]["pullBatchSize"] > 0
    assert postgres["tableMappings"][0]["tableEngine"] == "ReplacingMergeTree"
    assert create(client, body_of("kafka", destination={"table": "t"}))["destination"] == {
        "database": "default",
        "managedTable": False,
        "table": "t",
    }


def test_schema_registry_credentials_should_never_be_answered(client: Client) -> None:
    body = body_of("kafka")
    body["source"]["kafka"]["format"] = "AvroConfluent"
    registry = {"url": "https://sr", "authentication": "PLAIN"}
    body["source"]["kafka"]["schemaRegistry"] = {
        **registry,
        "credentials": {"username": "sr", "password": "registry-secret"},
    }
    pipe = create(client, body)
    assert pipe["source"]["kafka"]["schemaRegistry"] == registry
    assert "registry-secret" not in str(ok(client.get(PIPES)))


def test_two_pipes_may_share_a_name_in_one_service(client: Client) -> None:
    first = create(client, body_of("kafka", name="twin"))
    second = create(client, body_of("kafka", name="twin"))
    assert first["id"] != second["id"]
    assert [p["id"] for p in ok(client.get(PIPES)) if p["name"] == "twin"] == [
        first["id"],
        second["id"],
    ]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A body edit: set the dotted ``path`` to ``value`` (``...`` deletes it)."""

    def edit(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = body
        for key in parents:
            node = node[key]
        if value is ...:
            del node[last]
        else:
            node[last] = value

    return edit


def _all(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        for one in edits:
            one(body)

    return edit


KF, OS, KN, PG = (f"source.{k}" for k in ("kafka", "objectStorage", "kinesis", "postgres"))
# (kind, edit of a valid body, the error message the 400 carries): one row per rule.
REFUSED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("kafka", _set("name", ...), "name is required"),
    ("kafka", _set("name", ""), "name must be between 1 and 255 characters long"),
    ("kafka", _set("source", ...), "source is required"),
    ("kafka", _set("destination", ...), "destination is required"),
    ("kafka", _set("source.kinesis", {}), "source must hold exactly one source kind"),
    ("kafka", _set("source.pulsar", {}), "source.pulsar is not an allowed field"),
    ("kafka", _set(f"{KF}.format", ...), f"{KF}.format is required"),
    ("kafka", _set(f"{KF}.brokers", ...), f"{KF}.brokers is required"),
    ("kafka", _set(f"{KF}.topics", ...), f"{KF}.topics is required"),
    ("kafka", _set(f"{KF}.type", "pulsar"), f"{KF}.type must be one of kafka, redpanda"),
    ("kafka", _set(f"{KF}.format", "CSV"), f"{KF}.format must be one of JSONEachRow"),
    ("kafka", _set(f"{KF}.credentials", ...), f"{KF}.credentials are required"),
    (
        "kafka",
        _set(f"{KF}.credentials", {"accessKeyId": "a", "secretKey": "s"}),
        f"{KF}.credentials {{accessKeyId, secretKey}} do not fit authentication SCRAM-SHA-512",
    ),
    (
        "kafka",
        _set(f"{KF}.authentication", "IAM_ROLE"),
        f"{KF}.authentication IAM_ROLE is only available for type msk",
    ),
    (
        "kafka",
        _all(_set(f"{KF}.type", "msk"), _set(f"{KF}.authentication", "IAM_ROLE")),
        f"{KF}.iamRole is required for authentication IAM_ROLE",
    ),
    (
        "kafka",
        _set(f"{KF}.type", "azureeventhub"),
        f"{KF}.credentials must be {{connectionString}} for type azureeventhub",
    ),
    (
        "kafka",
        _all(
            _set(f"{KF}.authentication", "PLAIN"),
            _set(f"{KF}.credentials", {"connectionString": "Endpoint=sb://x"}),
        ),
        f"{KF}.credentials {{connectionString}} is only for type azureeventhub",
    ),
    (
        "kafka",
        _set(f"{KF}.format", "AvroConfluent"),
        f"{KF}.schemaRegistry is required for format AvroConfluent",
    ),
    (
        "kafka",
        _set(f"{KF}.schemaRegistry", {"url": "https://sr", "authentication": "PLAIN"}),
        f"{KF}.schemaRegistry.credentials are required for authentication PLAIN",
    ),
    (
        "kafka",
        _set(f"{KF}.offset", {"strategy": "from_timestamp"}),
        f"{KF}.offset.timestamp is required for strategy from_timestamp",
    ),
    (
        "kafka",
        _set(f"{KF}.offset", {"strategy": "from_latest", "timestamp": "2024-01-01T00:00"}),
        f"{KF}.offset.timestamp is only taken with strategy from_timestamp",
    ),
    (
        "kafka",
        _set(f"{KF}.offset", {"strategy": "from_timestamp", "timestamp": "2024-01-01"}),
        f"{KF}.offset.timestamp must be a timestamp shaped YYYY-MM-DDTHH:MM",
    ),
    ("kafka", _set(f"{KF}.offset", {"strategy": "latest"}), f"{KF}.offset.strategy must be one"),
    ("objectStorage", _set(f"{OS}.format", ...), f"{OS}.format is required"),
    ("objectStorage", _set(f"{OS}.url", ...), f"{OS}.url is required for type s3"),
    ("objectStorage", _set(f"{OS}.format", "ORC"), f"{OS}.format must be one of JSONEachRow"),
    ("objectStorage", _set(f"{OS}.type", "hdfs"), f"{OS}.type must be one of s3"),
    ("objectStorage", _set(f"{OS}.compression", "lz4"), f"{OS}.compression must be one of none"),
    (
        "objectStorage",
        _set(f"{OS}.accessKey", ...),
        f"{OS}.accessKey is required for authentication",
    ),
    (
        "objectStorage",
        _set(f"{OS}.authentication", "SERVICE_ACCOUNT"),
        f"{OS}.authentication SERVICE_ACCOUNT is not available for type s3",
    ),
    (
        "objectStorage",
        _set(f"{OS}.iamRole", "arn:aws:iam::1:role/r"),
        f"{OS}.iamRole is not taken by authentication IAM_USER",
    ),
    (
        "objectStorage",
        _set(f"{OS}.type", "azureblobstorage"),
        f"{OS}.authentication IAM_USER is not available for type azureblobstorage",
    ),
    (
        "objectStorage",
        _all(
            _set(f"{OS}.type", "azureblobstorage"),
            _set(f"{OS}.authentication", ...),
            _set(f"{OS}.accessKey", ...),
            _set(f"{OS}.connectionString", "AccountName=a;AccountKey=k"),
        ),
        f"{OS}.path is required for type azureblobstorage",
    ),
    (
        "objectStorage",
        _set(f"{OS}.queueUrl", "https://sqs/q"),
        f"{OS}.queueUrl is only taken when isContinuous is true",
    ),
    (
        "objectStorage",
        _all(_set(f"{OS}.skipInitialLoad", True), _set(f"{OS}.startAfter", "a.csv")),
        f"{OS}.startAfter cannot be provided when skipInitialLoad is true",
    ),
    ("kinesis", _set(f"{KN}.streamName", ...), f"{KN}.streamName is required"),
    ("kinesis", _set(f"{KN}.region", ...), f"{KN}.region is required"),
    ("kinesis", _set(f"{KN}.format", ...), f"{KN}.format is required"),
    ("kinesis", _set(f"{KN}.format", "Protobuf"), f"{KN}.format must be one of JSONEachRow"),
    ("kinesis", _set(f"{KN}.iteratorType", "OLDEST"), f"{KN}.iteratorType must be one of"),
    (
        "kinesis",
        _set(f"{KN}.iamRole", ...),
        f"{KN}.iamRole is required for authentication IAM_ROLE",
    ),
    (
        "kinesis",
        _set(f"{KN}.authentication", "IAM_USER"),
        f"{KN}.accessKey is required for authentication IAM_USER",
    ),
    (
        "kinesis",
        _set(f"{KN}.iteratorType", "AT_TIMESTAMP"),
        f"{KN}.timestamp is required for iteratorType AT_TIMESTAMP",
    ),
    (
        "kinesis",
        _set(f"{KN}.timestamp", 1709251200),
        f"{KN}.timestamp is only taken with iteratorType AT_TIMESTAMP",
    ),
    ("postgres", _set(f"{PG}.host", ...), f"{PG}.host is required"),
    ("postgres", _set(f"{PG}.port", ...), f"{PG}.port is required"),
    ("postgres", _set(f"{PG}.port", 70000), f"{PG}.port must be between 1 and 65535"),
    ("postgres", _set(f"{PG}.database", ...), f"{PG}.database is required"),
    ("postgres", _set(f"{PG}.tableMappings", ...), f"{PG}.tableMappings is required"),
    ("postgres", _set(f"{PG}.tableMappings", []), f"{PG}.tableMappings must hold at least one"),
    ("postgres", _set(f"{PG}.type", "mysql"), f"{PG}.type must be one of postgres, supabase"),
    ("postgres", _set(f"{PG}.credentials", ...), f"{PG}.credentials are required"),
    (
        "postgres",
        _set(f"{PG}.credentials", {"username": "u"}),
        f"{PG}.credentials.password is required for authentication basic",
    ),
    (
        "postgres",
        _set(f"{PG}.authentication", "IAM_ROLE"),
        f"{PG}.authentication IAM_ROLE is only available for types rdspostgres, aurorapostgres",
    ),
    (
        "postgres",
        _all(_set(f"{PG}.type", "rdspostgres"), _set(f"{PG}.authentication", "IAM_ROLE")),
        f"{PG}.iamRole is required for authentication IAM_ROLE",
    ),
    (
        "postgres",
        _set(f"{PG}.iamRole", "arn:aws:iam::1:role/r"),
        f"{PG}.iamRole is only taken by authentication IAM_ROLE",
    ),
    (
        "postgres",
        lambda b: b["source"]["postgres"]["tableMappings"].append(
            dict(b["source"]["postgres"]["tableMappings"][0])
        ),
        f"{PG}.tableMappings.1 lists the same table mapping twice",
    ),
    (
        "postgres",
        _set(f"{PG}.settings", {"replicationMode": "logical"}),
        f"{PG}.settings.replicationMode must be one of cdc",
    ),
    ("kafka", _set("destination.table", ...), "destination.table is required"),
    (
        "kafka",
        _set("destination.columns", ...),
        "destination.columns are required for a managed table",
    ),
    (
        "kafka",
        _set("destination.tableDefinition", {"engine": {"type": "Log"}}),
        "destination.tableDefinition.engine.type must be one of MergeTree",
    ),
    (
        "kafka",
        _set("destination.tableDefinition", {"sortingKey": ["nope"]}),
        "destination.tableDefinition.sortingKey nope is not a column of the table",
    ),
    (
        "kafka",
        _set("destination.tableDefinition", {"engine": {"versionColumnId": "v"}}),
        "destination.tableDefinition.engine.versionColumnId v is not a column of the table",
    ),
    (
        "kafka",
        _set("fieldMappings", MAPPINGS[:1]),
        "fieldMappings leave destination columns amount not mapped",
    ),
    (
        "kafka",
        _set("fieldMappings", [*MAPPINGS, {"sourceField": "x", "destinationField": "x"}]),
        "fieldMappings.2.destinationField x is not a column of the destination table",
    ),
    ("kafka", _set("scaling", {"replicas": 41}), "scaling.replicas must be between 1 and 40"),
    ("kafka", _set("scaling", {"replicas": None}), "scaling.replicas must be an integer"),
    ("kafka", _set("settings", {"engine_max_threads": 65}), "settings.engine_max_threads"),
]


@pytest.mark.parametrize(
    ("kind", "edit", "message"),
    REFUSED,
    ids=[f"{i:02d}-{row[2][:48]}" for i, row in enumerate(REFUSED)],
)
def test_create_should_refuse_each_invalid_body_with_the_real_error_body(
    client: Client, kind: str, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    body = body_of(kind)
    edit(body)
    text = error(client.post(PIPES, json=body), 400)
    assert text.startswith("BAD_REQUEST: " + message), text
    assert len(ok(client.get(PIPES))) == 6  # nothing was created


# (kind, edit): bodies the inferred rules must still accept.
ACCEPTED: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    (
        "kafka",
        _all(
            _set(f"{KF}.type", "msk"),
            _set(f"{KF}.authentication", "IAM_ROLE"),
            _set(f"{KF}.credentials", ...),
            _set(f"{KF}.iamRole", "arn:aws:iam::1:role/r"),
        ),
    ),
    (
        "kafka",
        _all(
            _set(f"{KF}.type", "azureeventhub"),
            _set(f"{KF}.authentication", "PLAIN"),
            _set(f"{KF}.credentials", {"connectionString": "Endpoint=sb://x"}),
        ),
    ),
    (
        "kafka",
        _set(f"{KF}.offset", {"strategy": "from_timestamp", "timestamp": "2024-03-01T00:00"}),
    ),
    (
        "objectStorage",
        _all(
            _set(f"{OS}.type", "azureblobstorage"),
            _set(f"{OS}.authentication", ...),
            _set(f"{OS}.accessKey", ...),
            _set(f"{OS}.url", ...),
            _set(f"{OS}.connectionString", "AccountName=a;AccountKey=k"),
            _set(f"{OS}.path", "data/*.json"),
            _set(f"{OS}.azureContainerName", "c"),
        ),
    ),
    (
        "objectStorage",
        _all(
            _set(f"{OS}.type", "gcs"),
            _set(f"{OS}.authentication", "SERVICE_ACCOUNT"),
            _set(f"{OS}.accessKey", ...),
            _set(f"{OS}.serviceAccountKey", "e30="),
        ),
    ),
    ("objectStorage", _all(_set(f"{OS}.isContinuous", True), _set(f"{OS}.queueUrl", "https://q"))),
    (
        "kinesis",
        _all(
            _set(f"{KN}.iamRole", ...),
            _set(f"{KN}.accessKey", {"accessKeyId": "a", "secretKey": "s"}),
        ),
    ),
    ("kinesis", _all(_set(f"{KN}.iteratorType", "AT_TIMESTAMP"), _set(f"{KN}.timestamp", 1))),
    (
        "postgres",
        _all(
            _set(f"{PG}.type", "aurorapostgres"),
            _set(f"{PG}.authentication", "IAM_ROLE"),
            _set(f"{PG}.credentials", {"username": "u"}),
            _set(f"{PG}.iamRole", "arn:aws:iam::1:role/r"),
        ),
    ),
    ("postgres", _all(_set("destination", {"database": "crm"}), _set("fieldMappings", ...))),
    ("kafka", _all(_set("destination", {"table": "existing"}), _set("fieldMappings", ...))),
    (
        "kafka",
        _set(
            "scaling",
            {
                "replicas": 40,
                "replicaCpuMillicores": 2000,
                "replicaMemoryGb": 8,
                "concurrency": 34,
            },
        ),
    ),
]


@pytest.mark.parametrize(("kind", "edit"), ACCEPTED)
def test_create_should_accept_every_valid_variant(
    client: Client, kind: str, edit: Callable[[dict[str, Any]], None]
) -> None:
    body = body_of(kind)
    edit(body)
    assert create(client, body)["state"] == "Provisioning"


def test_create_on_an_idle_service_should_be_refused_with_424(client: Client) -> None:
    url = f"/v1/organizations/{ORG_ID}/services/{ARCHIVE}/pipes"
    assert "is idle" in error(client.post(url, json=body_of("kafka")), 424)


# (kind, commands, state after each command's answer, state once its transition is over)
TRANSITIONS: list[tuple[str, list[str], list[tuple[str, str]]]] = [
    ("kafka", [], []),
    ("kafka", ["stop"], [("Stopping", "Stopped")]),
    ("kafka", ["stop", "start"], [("Stopping", "Stopped"), ("Provisioning", "Running")]),
    ("objectStorage", ["stop"], [("Stopping", "Stopped")]),
    ("kinesis", ["stop", "start"], [("Stopping", "Stopped"), ("Provisioning", "Running")]),
    ("postgres", ["stop"], [("Pausing", "Paused")]),
    ("postgres", ["stop", "start"], [("Pausing", "Paused"), ("Provisioning", "Running")]),
    ("postgres", ["resync"], [("Resync", "Running")]),
    ("postgres", ["stop", "resync"], [("Pausing", "Paused"), ("Resync", "Running")]),
    # No-ops answer 200 with the state unchanged.
    ("kafka", ["start"], [("Running", "Running")]),
    ("kafka", ["stop", "stop"], [("Stopping", "Stopped"), ("Stopped", "Stopped")]),
    ("postgres", ["stop", "stop"], [("Pausing", "Paused"), ("Paused", "Paused")]),
]


@pytest.mark.parametrize(("kind", "commands", "states"), TRANSITIONS)
def test_a_pipe_should_move_through_each_transition_after_transition_ms(
    client: Client, clock: Clock, kind: str, commands: list[str], states: list[tuple[str, str]]
) -> None:
    pipe_id = create(client, body_of(kind))["id"]
    clock.advance(TRANSITION_MS - 1)
    assert state_of(client, pipe_id) == "Provisioning"
    clock.advance(1)
    assert state_of(client, pipe_id) == "Running"
    for name, (answered, settled) in zip(commands, states, strict=True):
        assert command(client, pipe_id, name) == answered
        clock.advance(TRANSITION_MS - 1)
        assert state_of(client, pipe_id) == answered
        clock.advance(1)
        assert state_of(client, pipe_id) == settled
        assert [p["state"] for p in ok(client.get(PIPES)) if p["id"] == pipe_id] == [settled]


def test_a_command_during_a_transition_should_win_and_restart_the_clock(
    client: Client, clock: Clock
) -> None:
    pipe_id = create(client, body_of("kafka"))["id"]
    clock.advance(100)
    assert command(client, pipe_id, "start") == "Provisioning"  # heading there already: no-op
    assert command(client, pipe_id, "stop") == "Stopping"
    clock.advance(TRANSITION_MS - 1)
    assert state_of(client, pipe_id) == "Stopping"
    clock.advance(1)
    assert state_of(client, pipe_id) == "Stopped"


def test_a_no_op_command_should_leave_updated_at_and_a_real_one_move_it(
    client: Client, clock: Clock
) -> None:
    url = f"{PIPES}/{KAFKA_PIPE}/state"
    before = ok(client.get(f"{PIPES}/{KAFKA_PIPE}"))["updatedAt"]
    assert ok(client.patch(url, json={"command": "start"}))["updatedAt"] == before
    assert ok(client.patch(url, json={"command": "stop"}))["updatedAt"] > before


# (pipe, body, status, message): refused state commands.
REFUSED_COMMANDS: list[tuple[str, Any, int, str]] = [
    (KAFKA_PIPE, {"command": "pause"}, 400, "command must be one of start, stop, resync"),
    (KAFKA_PIPE, {}, 400, "command is required"),
    (KAFKA_PIPE, {"command": "stop", "force": True}, 400, "force is not an allowed field"),
    (KAFKA_PIPE, {"command": "resync"}, 400, "resync applies to database pipes only"),
    ("00000000-0000-4000-8000-0000000000a4", {"command": "stop"}, 404, "Pipe"),
    ("not-a-uuid", {"command": "stop"}, 400, "pipeId must be a uuid"),
]


@pytest.mark.parametrize(("pipe_id", "body", "status", "message"), REFUSED_COMMANDS)
def test_state_command_should_refuse_bad_commands(
    client: Client, pipe_id: str, body: Any, status: int, message: str
) -> None:
    text = error(client.patch(f"{PIPES}/{pipe_id}/state", json=body), status)
    assert message in text


def test_a_completed_pipe_should_take_no_command(app: EmulatorApp, client: Client) -> None:
    app.runtime.store.data["pipes"][KAFKA_PIPE]["state"] = "Completed"
    text = error(client.patch(f"{PIPES}/{KAFKA_PIPE}/state", json={"command": "start"}), 400)
    assert "Completed" in text


def test_postgres_mapping_edit_should_wait_for_paused_not_pausing(
    client: Client, clock: Clock
) -> None:
    pipe_id = create(client, body_of("postgres"))["id"]
    clock.advance(TRANSITION_MS)
    add = {"sourceSchemaName": "public", "sourceTable": "orders", "targetTable": "orders"}
    edit = {"source": {"postgres": {"tableMappingsToAdd": [add]}}}
    running = error(client.patch(f"{PIPES}/{pipe_id}", json=edit), 400)
    assert running == "BAD_REQUEST: Postgres pipe must be paused to edit"
    assert command(client, pipe_id, "stop") == "Pausing"
    assert error(client.patch(f"{PIPES}/{pipe_id}", json=edit), 400) == running
    clock.advance(TRANSITION_MS)
    mappings = ok(client.patch(f"{PIPES}/{pipe_id}", json=edit))["source"]["postgres"]
    assert len(mappings["tableMappings"]) == 2


def test_updates_during_a_transition_should_be_taken(client: Client) -> None:
    pipe_id = create(client, body_of("kafka"))["id"]
    renamed = ok(client.patch(f"{PIPES}/{pipe_id}", json={"name": "renamed"}))
    assert (renamed["name"], renamed["state"]) == ("renamed", "Provisioning")


def test_admin_forced_state_should_end_a_pending_transition(
    app: EmulatorApp, client: Client, clock: Clock
) -> None:
    pipe_id = create(client, body_of("kafka"))["id"]
    ok(client.post(f"/_emulator/pipes/{pipe_id}/state", json={"state": "Failed"}))
    clock.advance(TRANSITION_MS * 2)
    assert state_of(client, pipe_id) == "Failed"
    assert command(client, pipe_id, "start") == "Provisioning"


def test_delete_should_remove_the_pipe_whatever_its_state(client: Client) -> None:
    pipe_id = create(client, body_of("kafka"))["id"]
    assert ok(client.delete(f"{PIPES}/{pipe_id}")) == {"id": pipe_id}
    assert "not found" in error(client.get(f"{PIPES}/{pipe_id}"), 404)
    assert "not found" in error(client.delete(f"{PIPES}/{pipe_id}"), 404)
    assert pipe_id not in [p["id"] for p in ok(client.get(PIPES))]
    assert ok(client.delete(f"{PIPES}/{POSTGRES_PAUSED_PIPE}")) == {"id": POSTGRES_PAUSED_PIPE}


def test_delete_on_an_idle_service_should_be_refused_with_424(
    app: EmulatorApp, client: Client
) -> None:
    app.runtime.store.data["services"][ANALYTICS]["state"] = "idle"
    assert "is idle" in error(client.delete(f"{PIPES}/{KAFKA_PIPE}"), 424)


# (body, scaling after): only the fields given change; null resets one to its default.
SCALED: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {"replicas": 2, "concurrency": 2, "replicaCpuMillicores": 500, "replicaMemoryGb": 2}),
    ({"replicas": 4}, {"replicas": 4}),
    ({"replicas": 1, "replicaCpuMillicores": 125}, {"replicas": 1, "replicaCpuMillicores": 125}),
    ({"replicaMemoryGb": 0.5}, {"replicaMemoryGb": 0.5}),
    (
        {"replicaMemoryGb": 8, "replicaCpuMillicores": 2000},
        {"replicaMemoryGb": 8, "replicaCpuMillicores": 2000},
    ),
    ({"concurrency": 34}, {"concurrency": 34}),
    ({"concurrency": 0}, {"concurrency": 0}),
    ({"replicas": None, "replicaMemoryGb": None}, {"replicas": 1, "replicaMemoryGb": 0.5}),
    (
        {"replicaCpuMillicores": None, "concurrency": None},
        {"replicaCpuMillicores": 125, "concurrency": 0},
    ),
]


@pytest.mark.parametrize(("body", "expected"), SCALED)
def test_scaling_should_change_only_the_fields_given(
    client: Client, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = ok(client.get(f"{PIPES}/{KAFKA_PIPE}"))["scaling"]
    after = ok(client.patch(f"{PIPES}/{KAFKA_PIPE}/scaling", json=body))["scaling"]
    assert after == {**before, **expected}
    assert ok(client.get(f"{PIPES}/{KAFKA_PIPE}"))["scaling"] == after


# (body, message): one row per scaling bound or type.
SCALING_REFUSED: list[tuple[Any, str]] = [
    ({"replicas": 0}, "replicas must be between 1 and 40"),
    ({"replicas": 41}, "replicas must be between 1 and 40"),
    ({"replicas": 2.5}, "replicas must be an integer"),
    ({"replicaCpuMillicores": 124}, "replicaCpuMillicores must be between 125 and 2000"),
    ({"replicaCpuMillicores": 2001}, "replicaCpuMillicores must be between 125 and 2000"),
    ({"replicaMemoryGb": 0.25}, "replicaMemoryGb must be between 0.5 and 8"),
    ({"replicaMemoryGb": 8.5}, "replicaMemoryGb must be between 0.5 and 8"),
    ({"replicaMemoryGb": "1"}, "replicaMemoryGb must be a number"),
    ({"concurrency": -1}, "concurrency must be between 0 and 34"),
    ({"concurrency": 35}, "concurrency must be between 0 and 34"),
    ({"cpu": 1}, "cpu is not an allowed field"),
    ([], "Request body must be a JSON object"),
]


@pytest.mark.parametrize(("body", "message"), SCALING_REFUSED)
def test_scaling_should_refuse_out_of_bounds_values(
    client: Client, body: Any, message: str
) -> None:
    text = error(client.patch(f"{PIPES}/{KAFKA_PIPE}/scaling", json=body), 400)
    assert text == f"BAD_REQUEST: {message}"


NEW_OPERATIONS = [
    ("POST", PIPES, body_of("kafka")),
    ("DELETE", f"{PIPES}/{KAFKA_PIPE}", None),
    ("PATCH", f"{PIPES}/{KAFKA_PIPE}/state", {"command": "stop"}),
    ("PATCH", f"{PIPES}/{KAFKA_PIPE}/scaling", {"replicas": 3}),
]


@pytest.mark.parametrize(("method", "url", "body"), NEW_OPERATIONS)
def test_a_spec_only_emulator_should_refuse_the_lifecycle_operations_as_unknown_routes(
    clock: Clock, method: str, url: str, body: Any
) -> None:
    app = make_app(clock, spec_only=True)
    with Client(app, auth=AUTH) as spec_only:
        assert error(spec_only.request(method, url, json=body), 404).startswith("NOT_FOUND: ")
        kafka = ok(spec_only.get(f"{PIPES}/{KAFKA_PIPE}"))
    assert (kafka["state"], kafka["scaling"]["replicas"]) == ("Running", 2)
    assert len(app.runtime.store.data["pipes"]) == 8


def test_transition_ms_should_be_configurable_at_runtime(client: Client, clock: Clock) -> None:
    config = ok(client.post("/_emulator/config", json={"transitionMs": 5000}))
    assert config["transitionMs"] == 5000
    pipe_id = create(client, body_of("kafka"))["id"]
    clock.advance(4999)
    assert state_of(client, pipe_id) == "Provisioning"
    clock.advance(1)
    assert state_of(client, pipe_id) == "Running"
    assert "transitionMs" in error(client.post("/_emulator/config", json={"transitionMs": -1}), 400)


def test_the_transition_ms_flag_should_set_how_long_a_real_server_keeps_a_pipe_provisioning() -> (
    None
):
    emulator = start_emulator("--transition-ms", "60000")
    try:
        assert emulator.configure()["transitionMs"] == 60000
        with httpx.Client(
            base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret), timeout=10
        ) as http:
            pipe = ok(http.post(PIPES, json=body_of("kafka")))
            assert ok(http.get(f"{PIPES}/{pipe['id']}"))["state"] == "Provisioning"
            emulator.configure(transitionMs=0)
            assert (
                ok(http.patch(f"{PIPES}/{pipe['id']}/state", json={"command": "stop"}))["state"]
                == "Stopping"
            )
            assert ok(http.get(f"{PIPES}/{pipe['id']}"))["state"] == "Stopped"
    finally:
        stop_emulator(emulator)


def test_a_pending_transition_should_survive_a_restart_on_the_same_data_file(
    tmp_path: Path, clock: Clock
) -> None:
    data = tmp_path / "emulator.json"
    first = create_app(
        config=EmulatorConfig(transition_ms=TRANSITION_MS),
        identities=Identities.from_env({}),
        data_file=data,
    )
    first.runtime.store.clock = clock
    with Client(first, auth=AUTH) as before:
        pipe_id = create(before, body_of("postgres"))["id"]
    again = create_app(identities=Identities.from_env({}), data_file=data)
    again.runtime.store.clock = clock
    with Client(again, auth=AUTH) as after:
        assert state_of(after, pipe_id) == "Provisioning"
        clock.advance(TRANSITION_MS)
        assert state_of(after, pipe_id) == "Running"
    assert json.loads(data.read_text())["pipes"][pipe_id]["state"] == "Running"
