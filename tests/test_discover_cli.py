"""``reconcile discover`` against the emulator: a pipe manifest that states only its source and
destination table is completed with the columns and field mappings the service infers from the
source's samples (comments kept, secrets never printed), and the completed manifest creates a
running pipe that then plans to no changes; a kind discovery cannot read, a manifest that
already states columns, and a source the service refuses are clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from reconciler.inventory.discover import column_type
from tests.support.cli import SECRET_ENV, run_cli
from tests.support.emulator import Emulator

# Four lines of kafka source; the destination names the table the pipe creates.
SOURCE = """\
# yaml-language-server: $schema=../schemas/pipe.schema.json
# Orders from the shop's Kafka cluster.
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: orders-discovered
spec:
  organizationId: 7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c
  service: analytics
  name: orders-discovered
  source:
    kafka:
      format: JSONEachRow
      brokers: broker-1.example.com:9092
      topics: orders            # the sample the columns come from
      credentials: {username: {fromEnv: KAFKA_USER}, password: {fromEnv: KAFKA_PASSWORD}}
  destination:
    database: sales
    table: orders_discovered
    managedTable: true
"""
DISCOVERED_COLUMNS = [
    {"name": "id", "type": "String"},
    {"name": "amount", "type": "Float64"},
    {"name": "ts", "type": "DateTime64(3)"},
    {"name": "updated", "type": "Int64"},
    {"name": "coupon", "type": "Nullable(String)"},
]


def _write(tmp_path: Path, text: str = SOURCE) -> Path:
    path = tmp_path / "m" / "orders.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _discovery_requests(emulator: Emulator) -> list[object]:
    return [r for r in emulator.requests() if str(r["path"]).endswith("/schemaDiscovery")]


def test_discover_completes_a_kafka_source_into_a_manifest_that_creates_a_running_pipe(
    emulator: Emulator, tmp_path: Path
) -> None:
    manifest = _write(tmp_path)
    printed = run_cli(["discover", str(manifest)], emulator.env())
    assert printed.exit_code == 0, printed.output
    assert manifest.read_text(encoding="utf-8") == SOURCE  # printed, not written
    assert [v for v in SECRET_ENV.values() if v in printed.output] == []
    assert "# Orders from the shop's Kafka cluster." in printed.stdout
    assert "topics: orders            # the sample the columns come from" in printed.stdout
    doc = YAML().load(printed.stdout)
    assert doc["spec"]["destination"]["columns"] == DISCOVERED_COLUMNS
    assert doc["spec"]["fieldMappings"] == [
        {"sourceField": c["name"], "destinationField": c["name"]} for c in DISCOVERED_COLUMNS
    ]
    assert doc["spec"]["destination"]["table"] == "orders_discovered"

    written = run_cli(["discover", str(manifest), "--write"], emulator.env())
    assert written.exit_code == 0, written.output
    assert "pipe orders-discovered: 5 columns discovered (sample orders)" in written.stdout
    assert manifest.read_text(encoding="utf-8") == printed.stdout
    assert run_cli(["fmt", "--check", str(manifest)], {}).exit_code == 0

    state = str(tmp_path / "s.json")
    applied = run_cli(["apply", str(manifest), "--state", state, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    pipes = [p for p in emulator.data()["pipes"].values() if p["name"] == "orders-discovered"]
    assert len(pipes) == 1 and pipes[0]["state"] == "Running"
    assert pipes[0]["destination"]["columns"] == DISCOVERED_COLUMNS
    again = run_cli(
        ["plan", str(manifest), "--state", state, "--detailed-exitcode"], emulator.env()
    )
    assert again.exit_code == 0, again.output


def test_discover_refuses_a_kind_it_cannot_read_before_sending(
    emulator: Emulator, tmp_path: Path
) -> None:
    text = SOURCE.replace(
        "    kafka:\n      format: JSONEachRow\n      brokers: broker-1.example.com:9092\n"
        "      topics: orders            # the sample the columns come from\n",
        "    pubsub:\n      format: JSONEachRow\n      projectId: p\n      topic: t\n"
        "      seekType: earliest\n",
    ).replace(
        "      credentials: {username: {fromEnv: KAFKA_USER}, password: {fromEnv: KAFKA_PASSWORD}}",
        "      serviceAccountKey: {serviceAccountFile: {fromEnv: PUBSUB_SERVICE_ACCOUNT}}",
    )
    refused = run_cli(["discover", str(_write(tmp_path, text))], emulator.env())
    assert refused.exit_code == 1
    assert "orders.yaml:12:5" in refused.stderr
    assert "schema discovery reads kafka and kinesis sources only, not pubsub" in refused.stderr
    assert _discovery_requests(emulator) == []


def test_discover_refuses_a_manifest_that_already_states_columns(
    emulator: Emulator, tmp_path: Path
) -> None:
    text = SOURCE + "    columns:\n      - {name: id, type: String}\n"
    refused = run_cli(["discover", str(_write(tmp_path, text))], emulator.env())
    assert refused.exit_code == 1
    assert "spec.destination.columns" in refused.stderr and "already stated" in refused.stderr
    assert _discovery_requests(emulator) == []


def test_discover_refuses_credentials_the_authentication_does_not_take_before_sending(
    emulator: Emulator, tmp_path: Path
) -> None:
    text = SOURCE.replace(
        "      format: JSONEachRow\n", "      format: JSONEachRow\n      authentication: IAM_ROLE\n"
    )
    refused = run_cli(["discover", str(_write(tmp_path, text))], emulator.env())
    assert refused.exit_code == 1
    assert "spec.source.kafka.credentials: authentication IAM_ROLE takes no credentials" in (
        refused.stderr
    )
    assert _discovery_requests(emulator) == []
    assert [v for v in SECRET_ENV.values() if v in refused.output] == []


@pytest.mark.parametrize(
    ("field", "column"),
    [
        ({"name": "a", "type": "Int64", "optional": False}, "Int64"),
        ({"name": "a", "type": "String", "optional": True}, "Nullable(String)"),
        ({"name": "a", "type": "Array(Int64)", "optional": True}, "Array(Int64)"),
        ({"name": "a", "type": "JSON", "optional": True}, "JSON"),
        ({"name": "a", "type": "Nullable(Int64)", "optional": True}, "Nullable(Int64)"),
        ({"name": "a"}, "String"),
    ],
)
def test_an_optional_field_becomes_a_nullable_column_where_the_type_can_be(
    field: dict[str, object], column: str
) -> None:
    assert column_type(field) == column


def test_discover_names_the_pipe_status_and_message_when_the_service_refuses_the_source(
    emulator: Emulator, tmp_path: Path
) -> None:
    # The service reads from a timestamp only when it is given one.
    text = SOURCE.replace(
        "    kafka:\n      format: JSONEachRow\n      brokers: broker-1.example.com:9092\n"
        "      topics: orders            # the sample the columns come from\n"
        "      credentials: {username: {fromEnv: KAFKA_USER}, password: {fromEnv: KAFKA_PASSWORD}}\n",
        "    kinesis:\n      format: JSONEachRow\n      streamName: clickstream\n"
        "      region: us-east-1\n      iteratorType: AT_TIMESTAMP\n"
        "      authentication: IAM_USER\n"
        "      accessKey: {accessKeyId: {fromEnv: KINESIS_KEY_ID}, secretKey: {fromEnv: KINESIS_SECRET_KEY}}\n",
    )
    refused = run_cli(["discover", str(_write(tmp_path, text))], emulator.env())
    assert refused.exit_code == 1, refused.output
    assert "schema discovery of pipe orders-discovered" in refused.stderr
    assert "400" in refused.stderr and "timestamp is required" in refused.stderr
    assert [v for v in SECRET_ENV.values() if v in refused.output] == []


def test_discover_reads_a_kinesis_stream_too(emulator: Emulator, tmp_path: Path) -> None:
    text = SOURCE.replace(
        "    kafka:\n      format: JSONEachRow\n      brokers: broker-1.example.com:9092\n"
        "      topics: orders            # the sample the columns come from\n"
        "      credentials: {username: {fromEnv: KAFKA_USER}, password: {fromEnv: KAFKA_PASSWORD}}\n",
        "    kinesis:\n      format: JSONEachRow\n      streamName: clickstream\n"
        "      region: us-east-1\n      iteratorType: LATEST\n"
        "      iamRole: arn:aws:iam::123456789012:role/reader\n",
    )
    printed = run_cli(["discover", str(_write(tmp_path, text))], emulator.env())
    assert printed.exit_code == 0, printed.output
    columns = YAML().load(printed.stdout)["spec"]["destination"]["columns"]
    assert columns == [
        {"name": "session", "type": "String"},
        {"name": "page", "type": "String"},
        {"name": "at", "type": "DateTime64(3)"},
        {"name": "ms", "type": "Int64"},
        {"name": "referrer", "type": "JSON"},
    ]


def test_discover_drafts_a_manifest_from_flags_that_creates_a_running_pipe(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    flags = [
        *("--service", "analytics", "--name", "payments-draft"),
        *("--kafka-brokers", "broker-1.example.com:9092", "--kafka-topics", "payments"),
        *("--kafka-user-env", "KAFKA_USER", "--kafka-password-env", "KAFKA_PASSWORD"),
        *("--database", "sales", "--table", "payments_draft"),
    ]
    written = run_cli(["discover", *flags, "--write"], emulator.env())
    assert written.exit_code == 0, written.output
    assert "payments-draft.yaml: pipe payments-draft: 4 columns discovered" in written.stdout
    text = (tmp_path / "payments-draft.yaml").read_text(encoding="utf-8")
    assert "username: {fromEnv: KAFKA_USER}" in text
    assert [v for v in SECRET_ENV.values() if v in text + written.output] == []
    assert "- {name: tags, type: Array(String)}" in text
    again = run_cli(["discover", *flags, "--write"], emulator.env())
    assert again.exit_code == 1 and "not overwritten" in again.stderr

    args = ["payments-draft.yaml", "--state", "s.json"]
    applied = run_cli(["apply", *args, "--auto-approve"], emulator.env())
    assert applied.exit_code == 0, applied.output
    assert run_cli(["plan", *args, "--detailed-exitcode"], emulator.env()).exit_code == 0


def test_discover_without_a_manifest_needs_one_source_by_flags(emulator: Emulator) -> None:
    bare = run_cli(["discover"], emulator.env())
    assert bare.exit_code == 1 and "give MANIFEST, or --service and --name" in bare.stderr
    two = ["--kafka-topics", "t", "--kinesis-stream", "s"]
    both = run_cli(["discover", "--service", "analytics", "--name", "p", *two], emulator.env())
    assert both.exit_code == 1 and "give one source" in both.stderr
