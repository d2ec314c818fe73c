"""Every class of manifest error, reported with its exact ``file:line:col`` and JSON path.

Each case writes a small YAML file into a temporary directory, loads it with
``load_resources`` (run from that directory so file names stay relative) and compares the
full error lines. Also covers: all errors reported at once across files, and secrets never
echoed in a message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.manifests import (
    DASHBOARD,
    KAFKA_PIPE,
    ORGANIZATION,
    error_lines,
    replace_line,
    write,
)

CASES: list[tuple[str, str | bytes, list[str]]] = [
    (
        "setting_above_maximum",
        replace_line(KAFKA_PIPE, "wait_ms: 5000", "wait_ms: 70000"),
        [
            "m.yaml:17:5: spec.settings.streaming_max_insert_wait_ms:"
            " 70000 is greater than the maximum of 60000"
        ],
    ),
    (
        "unknown_field_with_suggestion",
        replace_line(
            KAFKA_PIPE,
            "      reversePrivateEndpointIds:",
            "      brokerz: b\n      reversePrivateEndpointIds:",
        ),
        [
            "m.yaml:14:7: spec.source.kafka.brokerz: unknown field 'brokerz' (did you mean 'brokers'?)"
        ],
    ),
    (
        "wrong_type",
        replace_line(KAFKA_PIPE, "engine_max_threads: 4", 'engine_max_threads: "12"'),
        ["m.yaml:18:5: spec.settings.engine_max_threads: expected an integer, got string '12'"],
    ),
    (
        "enum_lists_allowed_values",
        replace_line(KAFKA_PIPE, "  settings:", "  state: Runing\n  settings:"),
        [
            "m.yaml:16:3: spec.state: 'Runing' is not one of the allowed values: Unknown,"
            " Provisioning, Running, Degraded, Stopping, Stopped, Failed, Completed,"
            " InternalError, Setup, Snapshot, Paused, Pausing, Modifying, Resync"
            " (did you mean 'Running'?)"
        ],
    ),
    (
        "missing_required_at_parent",
        replace_line(KAFKA_PIPE, "  pipeId: 0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61\n", ""),
        [
            "m.yaml:5:1: spec: spec.name is required when spec.pipeId is not given: without an "
            "id the pipe is bound by its name (or created with it)"
        ],
    ),
    (
        "secret_oneof_closest_alternative",
        replace_line(KAFKA_PIPE, "{fromEnv: KAFKA_USER}", "{fromEnvv: KAFKA_USER}"),
        [
            "m.yaml:12:9: spec.source.kafka.credentials.username: matches none of"
            " {fromEnv: NAME} or {fromFile: PATH}; closest is {fromEnv: NAME}:"
            " missing required field 'fromEnv'; unknown field 'fromEnvv' (did you mean 'fromEnv'?)"
        ],
    ),
    (
        "kafka_credentials_of_no_known_shape_name_every_shape",
        replace_line(
            replace_line(
                KAFKA_PIPE, "username: {fromEnv: KAFKA_USER}", "token: {fromEnv: KAFKA_USER}"
            ),
            "        password: {fromFile: secrets/kafka-password}\n",
            "",
        ),
        [
            "m.yaml:11:7: spec.source.kafka.credentials: matches none of User name and password"
            " or Access key or Connection string or Mutual TLS; closest is Connection string:"
            " missing required field 'connectionString'; unknown field 'token'"
            " (allowed: connectionString)"
        ],
    ),
    (
        "only_a_kind_reports_each_missing_field_once",
        "kind: Pipe\n",
        [
            "m.yaml:1:1: missing required field 'apiVersion' (use reconcile/v1)",
            "m.yaml:1:1: missing required fields 'metadata', 'spec'",
        ],
    ),
    (
        "both_service_and_service_id",
        replace_line(KAFKA_PIPE, "  pipeId:", "  service: analytics\n  pipeId:"),
        [
            "m.yaml:5:1: spec: needs exactly one of serviceId or service, found serviceId and service"
        ],
    ),
    (
        "no_source_kind",
        replace_line(KAFKA_PIPE, "    kafka:", "    validateSamples: true\n    kafka_:"),
        [
            "m.yaml:9:3: spec.source: needs exactly one of kafka, objectStorage, kinesis, pubsub,"
            " postgres, mysql, mongodb or bigquery, found none",
            "m.yaml:11:5: spec.source.kafka_: unknown field 'kafka_' (did you mean 'kafka'?)",
        ],
    ),
    (
        "bad_uuid",
        replace_line(KAFKA_PIPE, "1e2f3a4b5c61", "nope"),
        [
            "m.yaml:8:3: spec.pipeId: '0b5e7d1c-2a3f-4b6e-8c9d-nope' is not a valid UUID"
            " (expected the form 0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61)"
        ],
    ),
    (
        "duplicate_key",
        replace_line(
            KAFKA_PIPE,
            "    engine_max_threads: 4",
            "    engine_max_threads: 4\n    engine_max_threads: 5",
        ),
        [
            "m.yaml:19:5: spec.settings.engine_max_threads: duplicate key 'engine_max_threads'"
            " (first defined at line 18)"
        ],
    ),
    (
        "yaml_syntax_error",
        "apiVersion: reconcile/v1\nkind: [Pipe\n",
        [
            "m.yaml:3:1: YAML syntax error: did not find expected ',' or ']'"
            " (while parsing a flow sequence)"
        ],
    ),
    (
        "tab_indentation",
        "apiVersion: reconcile/v1\nmetadata:\n\tname: x\n",
        ["m.yaml:3:1: tab character in indentation: indent with spaces"],
    ),
    (
        "invalid_utf8",
        b"apiVersion: reconcile/v1\nkind: Pipe\nmetadata: {name: \xe9t\xe9}\n",
        ["m.yaml:3:18: invalid UTF-8 (byte 0xe9): manifests must be UTF-8"],
    ),
    ("empty_file", "# only a comment\n", ["m.yaml:1:1: file is empty: it holds no manifest"]),
    (
        "non_mapping_document",
        "- apiVersion: reconcile/v1\n",
        ["m.yaml:1:1: a manifest must be a mapping (apiVersion, kind, ...), got a list"],
    ),
    (
        "unknown_kind",
        replace_line(KAFKA_PIPE, "kind: Pipe", "kind: Pipes"),
        [
            "m.yaml:2:1: kind: unknown kind 'Pipes' (did you mean 'Pipe'?) (known: Pipe, "
            "Organization, Dashboard, ReversePrivateEndpoint, CdcScaling)"
        ],
    ),
    (
        "unknown_api_version",
        replace_line(KAFKA_PIPE, "apiVersion: reconcile/v1", "apiVersion: v1"),
        ["m.yaml:1:1: apiVersion: unknown apiVersion 'v1' (known: reconcile/v1)"],
    ),
    (
        "missing_kind",
        replace_line(KAFKA_PIPE, "kind: Pipe\n", ""),
        [
            "m.yaml:1:1: missing required field 'kind' (one of Pipe, Organization, Dashboard, "
            "ReversePrivateEndpoint, CdcScaling)"
        ],
    ),
    (
        "bad_metadata_name",
        replace_line(KAFKA_PIPE, "name: orders", "name: Orders_"),
        [
            "m.yaml:4:3: metadata.name: 'Orders_' is not a valid name: use lower-case letters,"
            " digits, '.', '_' and '-', starting and ending with a letter or digit, at most 253"
            " characters"
        ],
    ),
    (
        "duplicate_table_mapping",
        replace_line(
            KAFKA_PIPE,
            "    kafka:\n",
            "    postgres:\n      tableMappings:\n"
            "        - {sourceSchemaName: public, sourceTable: a, targetTable: a}\n"
            "        - {sourceSchemaName: public, sourceTable: a, targetTable: a}\n"
            "    kafka_:\n",
        )
        .replace("    kafka_:\n      credentials:", "      credentials:")
        .replace(
            "      reversePrivateEndpointIds:\n        - e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51\n", ""
        ),
        [
            "m.yaml:13:11: spec.source.postgres.tableMappings[1]: duplicate table mapping public.a -> a (also at line 12)"
        ],
    ),
    (
        "duplicate_private_endpoint",
        ORGANIZATION + "    - {id: pe-0a1b2c3d4e5f, description: again}\n",
        [
            "m.yaml:10:8: spec.privateEndpoints[1].id: duplicate private endpoint id 'pe-0a1b2c3d4e5f' (also at line 9)"
        ],
    ),
    (
        "dashboard_tile_out_of_grid_and_id",
        replace_line(DASHBOARD, "x: 0,", "id: t1, x: 24,"),
        [
            "m.yaml:8:22: spec.tiles[0].id: unknown field 'id' (ids are assigned by the service)",
            "m.yaml:8:30: spec.tiles[0].x: 24 is greater than the maximum of 23",
        ],
    ),
    (
        "missing_organization",
        replace_line(KAFKA_PIPE, "  organizationId: 7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c\n", ""),
        [
            "m.yaml:5:1: spec: organizationId is not set: add spec.organizationId or pass"
            " --organization / RECONCILE_ORGANIZATION_ID"
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_load_should_report_error_with_file_line_col_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | bytes, expected: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "m.yaml", text)
    assert error_lines(["m.yaml"]) == expected


def test_load_should_report_missing_path_and_directory_without_manifests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    write(tmp_path, "empty/notes.txt", "not a manifest")
    assert error_lines(["nothere", "empty"]) == [
        "empty: directory holds no *.yaml or *.yml files",
        "nothere: no such file or directory",
    ]


def test_load_should_report_duplicate_name_within_kind_pointing_at_both_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.yaml", KAFKA_PIPE)
    write(tmp_path, "b.yaml", "# other\n" + KAFKA_PIPE)
    write(tmp_path, "c.yaml", DASHBOARD.replace("name: overview", "name: orders"))
    assert error_lines(["."]) == [
        "b.yaml:5:3: metadata.name: duplicate Pipe name 'orders': also defined at a.yaml:4:3"
    ]


def test_load_should_report_all_errors_of_all_files_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.yaml", replace_line(KAFKA_PIPE, "wait_ms: 5000", "wait_ms: 1"))
    write(tmp_path, "b.yaml", "a: 1\na: 2\n")
    write(tmp_path, "c.yaml", KAFKA_PIPE.replace("orders", "c") + "---\n" + "[]\n")
    lines = error_lines(["."])
    assert [line.split(": ")[0] for line in lines] == ["a.yaml:17:5", "b.yaml:2:1", "c.yaml:20:1"]


@pytest.mark.parametrize(
    "literal",
    ["'hunter2-secret'", "hunter2-secret", "123456789", "[hunter2-secret]"],
)
def test_load_should_reject_literal_secret_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, literal: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path, "m.yaml", replace_line(KAFKA_PIPE, "{fromFile: secrets/kafka-password}", literal)
    )
    lines = error_lines(["m.yaml"])
    assert lines == [
        "m.yaml:13:9: spec.source.kafka.credentials.password: is a secret: write"
        " {fromEnv: NAME} or {fromFile: PATH}, never the value"
    ]
    assert "hunter2" not in lines[0] and "123456789" not in lines[0]


def test_load_should_not_echo_values_under_secret_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        "m.yaml",
        replace_line(
            KAFKA_PIPE, "{fromFile: secrets/kafka-password}", "{value: hunter2, fromEnv: 7}"
        ),
    )
    lines = error_lines(["m.yaml"])
    assert len(lines) == 1 and "hunter2" not in lines[0]
    assert "unknown field 'value'" in lines[0]
