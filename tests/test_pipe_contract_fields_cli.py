"""Pipes using the contract's fields, through the real command line against an emulator on a
port: a postgres pipe with ``deleteOnMerge``, ``replicationMode`` and a ``partitionByExpr``
mapping is created and then plans no changes; a kinesis authentication change is an update; an
object-storage pipe without ``fieldMappings`` is created (mapped by column name) and
converges; a ``--replace`` whose manifest states nulls converges in one apply. Every request of
these runs is judged by the contract oracle like any other test's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cli import postgres_source, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, KINESIS_PIPE, ORG_ID, STAGING


def _args(command: str, tmp_path: Path, *extra: str) -> list[str]:
    args = [command, str(tmp_path / "m"), "--state", str(tmp_path / "s.json"), *extra]
    return [*args, "--auto-approve"] if command == "apply" else args


def _spec(**fields: Any) -> dict[str, Any]:
    return {"organizationId": ORG_ID, "serviceId": ANALYTICS, **fields}


POSTGRES = _spec(
    name="crm",
    source=postgres_source(
        {
            "sourceSchemaName": "public",
            "sourceTable": "orders",
            "targetTable": "orders",
            "partitionByExpr": "toYYYYMM(created_at)",
        },
        replicationMode="cdc",
        deleteOnMerge=True,
    ),
    destination={"database": "crm"},
)


def test_a_postgres_pipe_with_the_contracts_settings_is_created_and_then_plans_no_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "crm.yaml", "Pipe", "crm", POSTGRES)

    created = run_cli(_args("apply", tmp_path), emulator.env())

    assert created.exit_code == 0, created.output
    (post,) = [w for w in writes(emulator.requests()) if w["method"] == "POST"]
    postgres = post["body"]["source"]["postgres"]
    assert postgres["settings"] == {"replicationMode": "cdc", "deleteOnMerge": True}
    assert postgres["tableMappings"][0]["partitionByExpr"] == "toYYYYMM(created_at)"
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output


def test_a_kinesis_authentication_change_is_planned_and_applied_as_an_update(
    emulator: Emulator, tmp_path: Path
) -> None:
    access_key = {
        "accessKeyId": {"fromEnv": "KINESIS_KEY_ID"},
        "secretKey": {"fromEnv": "KINESIS_SECRET_KEY"},
    }
    spec = {
        "organizationId": ORG_ID,
        "serviceId": STAGING,
        "pipeId": KINESIS_PIPE,
        "source": {"kinesis": {"authentication": "IAM_USER", "accessKey": access_key}},
    }
    write_manifest(tmp_path / "m" / "clicks.yaml", "Pipe", "clicks", spec)

    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())

    assert planned.exit_code == 2, planned.output
    assert "Plan: 0 to create, 1 to update, 0 to replace" in planned.stdout
    assert "[update]" in planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    (patch,) = writes(emulator.requests())
    assert patch["method"] == "PATCH"
    assert patch["body"]["source"]["kinesis"]["authentication"] == "IAM_USER"
    assert (
        emulator.data()["pipes"][KINESIS_PIPE]["source"]["kinesis"]["authentication"] == "IAM_USER"
    )
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output


OBJECT_STORAGE = _spec(
    name="public-files",
    source={
        "objectStorage": {
            "type": "s3",
            "format": "JSONEachRow",
            "url": "https://bucket.example.com/data/*.json",
        }
    },
    destination={
        "database": "default",
        "table": "files",
        "managedTable": True,
        "columns": [{"name": "id", "type": "String"}, {"name": "size", "type": "UInt64"}],
    },
)


def test_an_object_storage_pipe_without_field_mappings_is_created_and_converges(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "files.yaml", "Pipe", "public-files", OBJECT_STORAGE)

    planned = run_cli(_args("plan", tmp_path), emulator.env())
    created = run_cli(_args("apply", tmp_path), emulator.env())

    assert "maps each source field to the destination column of the same name" in planned.stdout
    assert created.exit_code == 0, created.output
    (post,) = writes(emulator.requests())
    assert (
        "fieldMappings" not in post["body"]
        and "authentication" not in post["body"]["source"]["objectStorage"]
    )
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output


def test_a_replacement_stating_nulls_converges_in_one_apply(
    emulator: Emulator, tmp_path: Path
) -> None:
    live = emulator.data()["pipes"][KAFKA_PIPE]
    kafka = live["source"]["kafka"]
    spec = _spec(
        name=live["name"],
        source={
            "kafka": {
                "format": kafka["format"],
                "brokers": kafka["brokers"],
                "topics": "orders-v2",  # create-time: a replacement
                "caCertificate": None,
                "iamRole": None,
                "credentials": {
                    "username": {"fromEnv": "KAFKA_USER"},
                    "password": {"fromEnv": "KAFKA_PASSWORD"},
                },
            }
        },
        destination=live["destination"],
        fieldMappings=live["fieldMappings"],
        settings={"engine_max_threads": None},
    )
    write_manifest(tmp_path / "m" / "orders.yaml", "Pipe", "orders", spec)

    replaced = run_cli(_args("apply", tmp_path, "--replace"), emulator.env())

    assert replaced.exit_code == 0, replaced.output
    post = next(w for w in writes(emulator.requests()) if w["method"] == "POST")
    assert post["body"]["source"]["kafka"]["caCertificate"] is None
    assert post["body"]["settings"] == {"engine_max_threads": None}
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert again.exit_code == 0, again.output
