"""Our manifest schemas against the contract: every writable field managed or knowingly not,
no value accepted that the service refuses, and each field filed as writable or create-time as
the contract's bodies say.

When the service's description changes (a new field, a narrower enum, a tighter bound), one of
these tests fails and names the field, before a user meets the 400. ``make contract-check``
prints the same lists.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.drift import misfiled, refused, unmanaged
from tests.support.manifests import ORG, SERVICE, error_lines, write

ROOT = Path(__file__).resolve().parent.parent

# The contract's writable fields we do not manage, on purpose: the postgres IAM
# authentication. Every source kind and every organization field is managed.
KNOWN_UNMANAGED = {
    "Pipe": [
        "source.postgres.authentication",
        "source.postgres.iamRole",
    ],
    "Organization": [],
}


@pytest.mark.parametrize("kind", list(KNOWN_UNMANAGED))
def test_every_writable_field_of_the_contract_is_in_our_schema_or_knowingly_unmanaged(
    kind: str,
) -> None:
    assert unmanaged(kind) == KNOWN_UNMANAGED[kind]


@pytest.mark.parametrize("kind", list(KNOWN_UNMANAGED))
def test_our_schema_accepts_no_value_the_contract_refuses(kind: str) -> None:
    assert refused(kind) == []


def test_the_field_catalogue_files_each_pipe_field_as_the_contract_bodies_do() -> None:
    assert misfiled() == []


def test_contract_check_prints_each_unmanaged_field_on_a_line_of_its_own() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.contract.drift"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    expected = [
        f"{kind} spec.{dotted}: not managed"
        for kind, fields in KNOWN_UNMANAGED.items()
        for dotted in fields
    ]
    assert run.stdout.splitlines() == expected


POSTGRES = f"""\
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: crm
spec:
  organizationId: {ORG}
  serviceId: {SERVICE}
  name: crm
  source:
    postgres:
      host: db.example.com
      port: 5432
      database: crm
      credentials:
        username: {{fromEnv: PG_USER}}
        password: {{fromEnv: PG_PASSWORD}}
      settings:
        replicationMode: cdc
        deleteOnMerge: true
        enableFailoverSlots: false
      tableMappings:
        - sourceSchemaName: public
          sourceTable: orders
          targetTable: orders
          tableEngine: ReplacingMergeTree
          partitionKey: created_at
          partitionByExpr: toYYYYMM(created_at)
  destination:
    database: crm
"""


def test_a_postgres_manifest_takes_the_contracts_settings_and_table_mapping_fields(
    tmp_path: Path,
) -> None:
    assert error_lines([write(tmp_path, "crm.yaml", POSTGRES)]) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "replicationMode: cdc",
            "replicationMode: streaming",
            "m.yaml:18:9: spec.source.postgres.settings.replicationMode: 'streaming' is not one "
            "of the allowed values: cdc, snapshot, cdc_only",
        ),
        (
            "targetTable: orders",
            "targetTable: orders\n          sortingKeys: [id, id]",
            "m.yaml:25:11: spec.source.postgres.tableMappings[0].sortingKeys: lists 'id' more "
            "than once",
        ),
    ],
)
def test_a_postgres_manifest_is_held_to_the_contracts_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "m.yaml", POSTGRES.replace(old, new))

    assert error_lines(["m.yaml"]) == [expected]


OBJECT_STORAGE = f"""\
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: public-files
spec:
  organizationId: {ORG}
  serviceId: {SERVICE}
  name: public-files
  source:
    objectStorage:
      type: s3
      format: JSONEachRow
      url: https://bucket.example.com/data/*.json
      authentication: PUBLIC
  destination:
    database: default
    table: files
    columns: [{{name: id, type: String}}]
"""


def test_object_storage_public_authentication_is_refused_with_the_way_to_read_a_public_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "m.yaml", OBJECT_STORAGE)

    lines = error_lines(["m.yaml"])

    assert lines == [
        "m.yaml:14:7: spec.source.objectStorage.authentication: PUBLIC is not accepted: the "
        "service has no PUBLIC authentication: to read a public bucket, leave authentication "
        "and the credential fields (accessKey, iamRole, connectionString, serviceAccountKey) out"
    ]
    without = OBJECT_STORAGE.replace("      authentication: PUBLIC\n", "")
    assert error_lines([write(tmp_path, "ok.yaml", without)]) == []
