"""Create bodies: the POST the plan makes for each source kind passes the emulator's create
validation (its own implementation of the service's create schema), secrets are only ever
shown as markers, and what a pipe cannot be created without is an error naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.emulator.create import validate_pipe_create
from reconciler.model.resources import Resource
from reconciler.model.secrets import Secret, reveal
from reconciler.plan.actions import Op, Purpose
from reconciler.plan.diff import ChangeKind, SecretCheck
from reconciler.plan.lifecycle import create_body, plan_create
from reconciler.plan.planfile import action_to_json
from tests.contract.oracle import Contract
from tests.support.seed_ids import ANALYTICS, ORG_ID

CONTRACT = Contract.load()

KEY = b"k" * 32
TARGET = {"organizationId": "org-1", "serviceId": "svc-1"}
COLUMNS = [{"name": "id", "type": "String"}, {"name": "amount", "type": "Float64"}]
MAPPINGS = [
    {"sourceField": "id", "destinationField": "id"},
    {"sourceField": "total", "destinationField": "amount"},
]
TABLE = {"database": "sales", "table": "t", "managedTable": True, "columns": COLUMNS}

SPECS: dict[str, dict[str, Any]] = {
    "kafka": {
        "source": {
            "kafka": {
                "type": "confluent",
                "format": "AvroConfluent",
                "brokers": "b-1:9092,b-2:9092",
                "topics": "orders",
                "consumerGroup": "g",
                "offset": {"strategy": "from_timestamp", "timestamp": "2024-03-01T00:00"},
                "schemaRegistry": {"url": "https://registry.example.com"},
                "exactlyOnce": True,
                "authentication": "SCRAM-SHA-512",
                "credentials": {"username": Secret("u"), "password": Secret("p")},
            },
            "validateSamples": True,  # the create body's source takes it too
        },
        "destination": TABLE,
        "fieldMappings": MAPPINGS,
        "settings": {"streaming_max_insert_wait_ms": 5000, "engine_max_threads": None},
    },
    "objectStorage": {
        "source": {
            "objectStorage": {
                "type": "s3",
                "format": "CSVWithNames",
                "url": "https://bucket.example.com/data/**/*.csv.gz",
                "delimiter": ",",
                "compression": "gzip",
                "isContinuous": True,
                "queueUrl": "https://queue.example.com/123/notifications",
                "authentication": "IAM_USER",
                "accessKey": {"accessKeyId": Secret("AKIA"), "secretKey": Secret("s")},
            }
        },
        "destination": {
            **TABLE,
            "tableDefinition": {
                "engine": {"type": "ReplacingMergeTree", "versionColumnId": "amount"},
                "sortingKey": ["id"],
            },
        },
        "fieldMappings": MAPPINGS,
    },
    "kinesis": {
        "source": {
            "kinesis": {
                "format": "JSONEachRow",
                "streamName": "clicks",
                "region": "us-east-1",
                "iteratorType": "AT_TIMESTAMP",
                "timestamp": 1709251200,
                "useEnhancedFanOut": True,
                "authentication": "IAM_ROLE",
                "iamRole": "arn:aws:iam::123456789012:role/reader",
            }
        },
        "destination": TABLE,
        "fieldMappings": MAPPINGS,
        "scaling": {"replicas": 2, "replicaCpuMillicores": 500, "replicaMemoryGb": 2},
    },
    "postgres": {
        "source": {
            "postgres": {
                "type": "supabase",
                "host": "db.example.com",
                "port": 5432,
                "database": "crm",
                "credentials": {"username": Secret("u"), "password": Secret("p")},
                "settings": {"syncIntervalSeconds": 30, "publicationName": "crm_pub"},
                "tableMappings": [
                    {"sourceSchemaName": "public", "sourceTable": "a", "targetTable": "a"},
                    {
                        "sourceSchemaName": "public",
                        "sourceTable": "b",
                        "targetTable": "b",
                        "tableEngine": "ReplacingMergeTree",
                    },
                ],
            }
        },
        "destination": {"database": "crm"},
    },
}


def _resource(kind: str, spec: dict[str, Any]) -> Resource:
    return Resource("Pipe", f"new-{kind}", {**TARGET, "name": f"new {kind}", **spec}, "m.yaml")


@pytest.mark.parametrize("kind", list(SPECS))
def test_the_create_body_of_each_source_kind_passes_the_emulators_create_validation(
    kind: str,
) -> None:
    resource = _resource(kind, SPECS[kind])
    action = plan_create(resource, resource.spec, SecretCheck(KEY, {}), target=TARGET)
    assert action.operation is Op.CREATE and not action.errors, action.errors
    (post,) = action.requests
    assert (post.method, post.purpose, post.idempotent) == ("POST", Purpose.CREATE, False)
    assert post.path == "/v1/organizations/org-1/services/svc-1/pipes"
    body = reveal(post.body)
    assert CONTRACT.judge(_as_sent(post.path, body)) == []
    accepted = validate_pipe_create(body)  # raises the emulator's 400 on a bad body
    assert {k: v for k, v in accepted["source"].items() if k != "validateSamples"} == {
        k: v for k, v in body["source"].items() if k != "validateSamples"
    }
    assert "organizationId" not in body and "pipeId" not in body
    if kind == "kafka":  # a stated null is sent: the created pipe equals the manifest at once
        assert body["settings"] == {
            "streaming_max_insert_wait_ms": 5000,
            "engine_max_threads": None,
        }


def _as_sent(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The exchange the contract oracle judges: this body sent by the client, answered 400."""
    return {
        "method": "POST",
        "path": path.replace("org-1", ORG_ID).replace("svc-1", ANALYTICS),
        "agent": "reconcile",
        "request": body,
        "status": 400,
        "response": {"status": 400, "requestId": ORG_ID, "error": "BAD_REQUEST: judged alone"},
    }


NULLS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # kind: (stated nulls, what the create body holds of them)
    "kafka": (
        {"authentication": None, "caCertificate": None, "iamRole": None},
        {"caCertificate": None, "iamRole": None},  # the create takes no null authentication
    ),
    "objectStorage": (
        {"startAfter": None, "skipInitialLoad": None},
        {"startAfter": None, "skipInitialLoad": None},
    ),
    "postgres": ({"tlsHost": None, "caCertificate": None, "disableTls": None}, {}),
}


@pytest.mark.parametrize("kind", list(NULLS))
def test_a_create_sends_the_stated_nulls_the_contract_takes_and_leaves_out_the_others(
    kind: str,
) -> None:
    stated, sent = NULLS[kind]
    spec = {**SPECS[kind], "scaling": {"replicas": None}}
    spec["source"] = {kind: {**SPECS[kind]["source"][kind], **stated}}
    resource = _resource(kind, spec)

    action = plan_create(resource, resource.spec, SecretCheck(KEY, {}), target=TARGET)

    (post,) = action.requests
    body = reveal(post.body)
    assert {k: v for k, v in body["source"][kind].items() if k in stated} == sent
    assert "scaling" not in body
    assert CONTRACT.judge(_as_sent(post.path, body)) == []


def test_a_create_without_field_mappings_maps_by_column_name_and_says_so() -> None:
    spec = {k: v for k, v in SPECS["objectStorage"].items() if k != "fieldMappings"}
    resource = _resource("objectStorage", spec)

    action = plan_create(resource, resource.spec, SecretCheck(KEY, {}), target=TARGET)

    assert action.operation is Op.CREATE and not action.errors, action.errors
    assert "fieldMappings" not in reveal(action.requests[0].body)
    assert any(
        "maps each source field to the destination column of the same name" in w
        for w in action.warnings
    )


def test_a_create_shows_each_secret_as_a_marker_and_fingerprints_it() -> None:
    resource = _resource("kafka", SPECS["kafka"])
    action = plan_create(resource, resource.spec, SecretCheck(KEY, {}), target=TARGET)
    sensitive = [c for c in action.changes if c.kind is ChangeKind.SENSITIVE]
    assert [c.dotted for c in sensitive] == ["source.kafka.credentials"]
    assert set(action.secrets) == {"source.kafka.credentials"}
    document = str(action_to_json(action))
    assert "(sensitive)" in document and "'p'" not in document and "'u'" not in document


@pytest.mark.parametrize(
    ("kind", "drop", "field"),
    [
        ("kafka", ("source", "kafka", "topics"), "spec.source.kafka.topics"),
        ("kafka", ("source", "kafka", "credentials"), "spec.source.kafka.credentials"),
        ("objectStorage", ("source", "objectStorage", "url"), "spec.source.objectStorage.url"),
        ("kinesis", ("source", "kinesis", "timestamp"), "spec.source.kinesis.timestamp"),
        ("kinesis", ("destination",), "spec.destination.table"),
        ("postgres", ("source", "postgres", "tableMappings"), "tableMappings"),
        ("postgres", ("destination",), "spec.destination.database"),
    ],
)
def test_a_create_missing_what_a_pipe_needs_is_an_error_naming_the_field(
    kind: str, drop: tuple[str, ...], field: str
) -> None:
    spec = create_body(SPECS[kind])  # a deep copy without nulls
    node: Any = spec
    for part in drop[:-1]:
        node = node[part]
    del node[drop[-1]]
    resource = _resource(kind, spec)
    action = plan_create(resource, resource.spec, SecretCheck(KEY, {}), target=TARGET)
    assert action.operation is Op.ERROR and action.requests == ()
    assert any(field in e and "required to create the pipe" in e for e in action.errors)
