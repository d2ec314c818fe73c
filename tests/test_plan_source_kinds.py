"""Update bodies of the source kinds whose update shape requires members (mysql host and port,
mongodb uri and readPreference, pubsub authentication and serviceAccountKey), table mappings of
mysql and mongodb as add/remove by each kind's own key, bigquery's create-time mappings, and
what a new kind cannot be created without. Every body is judged by the contract oracle."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.secrets import Secret, reveal
from reconciler.plan.actions import Op
from reconciler.plan.createchecks import create_errors
from tests.contract.oracle import Contract
from tests.support.plan_inputs import pipe_resource, plan_for
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

PATH = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
LOGIN = {"username": "u", "password": None}


def _live(kind: str, source: dict[str, Any], state: str = "Paused") -> dict[str, Any]:
    return {"id": "p", "name": "orders", "state": state, "source": {kind: source}}


MYSQL = _live(
    "mysql",
    {
        "host": "db.example.com",
        "port": 3306,
        "settings": {"replicationMode": "cdc", "syncIntervalSeconds": 60},
        "tableMappings": [
            {"sourceSchemaName": "shop", "sourceTable": "orders", "targetTable": "orders"}
        ],
    },
)
MONGODB = _live(
    "mongodb",
    {
        "uri": "mongodb://db.example.com",
        "readPreference": "primary",
        "tableMappings": [
            {"sourceDatabaseName": "app", "sourceCollection": "users", "targetTable": "users"}
        ],
    },
)
PUBSUB = _live("pubsub", {"topic": "clicks", "authentication": "SERVICE_ACCOUNT"}, "Running")


def _judged(body: Any) -> list[str]:
    return Contract.load().judge_request("PATCH", PATH, reveal(body))


@pytest.mark.parametrize(
    ("spec", "live", "kind", "expected"),
    [
        # The manifest states a setting only: host and port come from the live pipe.
        (
            {"source": {"mysql": {"settings": {"syncIntervalSeconds": 30}}}},
            MYSQL,
            "mysql",
            {"host": "db.example.com", "port": 3306, "settings": {"syncIntervalSeconds": 30}},
        ),
        (
            {
                "source": {
                    "mongodb": {"uri": "mongodb://db.example.com", "readPreference": "nearest"}
                }
            },
            MONGODB,
            "mongodb",
            {"uri": "mongodb://db.example.com", "readPreference": "nearest"},
        ),
        # The service account key is never read back: the manifest's goes with the update.
        (
            {
                "source": {
                    "pubsub": {
                        "ackDeadline": 60,
                        "serviceAccountKey": {"serviceAccountFile": Secret("key")},
                    }
                }
            },
            PUBSUB,
            "pubsub",
            {
                "ackDeadline": 60,
                "authentication": "SERVICE_ACCOUNT",
                "serviceAccountKey": {"serviceAccountFile": "key"},
            },
        ),
    ],
)
def test_a_source_update_carries_the_members_its_kind_requires(
    spec: dict[str, Any], live: dict[str, Any], kind: str, expected: dict[str, Any]
) -> None:
    action = plan_for(spec, live)
    assert action.errors == ()
    update = [r.body for r in action.requests if r.body and "source" in r.body]
    assert [reveal(b["source"][kind]) for b in update] == [expected]
    assert [_judged(b) for b in update] == [[]]


def test_a_pubsub_update_without_its_key_in_the_manifest_is_an_error_before_sending() -> None:
    action = plan_for({"source": {"pubsub": {"ackDeadline": 60}}}, PUBSUB)
    assert action.operation is Op.ERROR and action.requests == ()
    assert any("source.pubsub.serviceAccountKey is required" in e for e in action.errors)


@pytest.mark.parametrize(
    ("kind", "live", "wanted", "removed"),
    [
        (
            "mysql",
            MYSQL,
            {"sourceSchemaName": "shop", "sourceTable": "refunds", "targetTable": "refunds"},
            {"sourceSchemaName": "shop", "sourceTable": "orders", "targetTable": "orders"},
        ),
        (
            "mongodb",
            MONGODB,
            {"sourceDatabaseName": "app", "sourceCollection": "events", "targetTable": "events"},
            {"sourceDatabaseName": "app", "sourceCollection": "users", "targetTable": "users"},
        ),
    ],
)
def test_table_mappings_of_a_database_kind_become_adds_and_removes_by_its_key(
    kind: str, live: dict[str, Any], wanted: dict[str, str], removed: dict[str, str]
) -> None:
    action = plan_for({"source": {kind: {"tableMappings": [wanted]}}}, live)
    (request,) = action.requests
    body = request.body["source"][kind]
    assert body["tableMappingsToAdd"] == [wanted]
    assert body["tableMappingsToRemove"] == [removed]
    assert _judged(request.body) == []


def test_a_changed_mysql_mapping_is_two_updates_each_with_host_and_port() -> None:
    changed = {**MYSQL["source"]["mysql"]["tableMappings"][0], "tableEngine": "MergeTree"}
    action = plan_for({"source": {"mysql": {"tableMappings": [changed]}}}, MYSQL)
    assert [sorted(r.body["source"]["mysql"]) for r in action.requests] == [
        ["host", "port", "tableMappingsToRemove"],
        ["host", "port", "tableMappingsToAdd"],
    ]
    assert [_judged(r.body) for r in action.requests] == [[], []]


def test_bigquery_table_mappings_differing_need_a_replacement() -> None:
    live = _live(
        "bigquery",
        {
            "snapshotStagingPath": "gs://b/s/",
            "tableMappings": [
                {"sourceDatasetName": "m", "sourceTable": "a", "targetTable": "a"},
            ],
        },
    )
    wanted = [{"sourceDatasetName": "m", "sourceTable": "b", "targetTable": "b"}]
    action = plan_for({"source": {"bigquery": {"tableMappings": wanted}}}, live)
    assert action.operation is Op.ERROR and action.requests == ()
    assert any("source.bigquery.tableMappings" in e and "--replace" in e for e in action.errors)


@pytest.mark.parametrize(
    ("source", "missing"),
    [
        ({"mysql": {"host": "h", "port": 1, "credentials": LOGIN}}, "settings.replicationMode"),
        ({"mongodb": {"uri": "mongodb://h", "readPreference": "primary"}}, "credentials"),
        (
            {
                "mysql": {
                    "type": "rdsmysql",
                    "host": "h",
                    "port": 1,
                    "authentication": "IAM_ROLE",
                    "credentials": LOGIN,
                    "settings": {"replicationMode": "cdc"},
                    "tableMappings": [
                        {"sourceSchemaName": "s", "sourceTable": "t", "targetTable": "t"}
                    ],
                }
            },
            "iamRole",
        ),
        ({"bigquery": {"snapshotStagingPath": "gs://b/"}}, "credentials"),
        (
            {"pubsub": {"format": "Avro", "projectId": "p", "topic": "t", "seekType": "timestamp"}},
            "seekTimestamp",
        ),
    ],
)
def test_a_new_kind_cannot_be_created_without_what_it_needs(
    source: dict[str, Any], missing: str
) -> None:
    spec = {"name": "p", "source": source, "destination": {"database": "d"}}
    kind = next(iter(source))
    errors = create_errors(pipe_resource(spec), spec)
    assert any(f"spec.source.{kind}.{missing} is required" in e for e in errors), errors
