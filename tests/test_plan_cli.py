"""`reconcile plan` against the emulator on loopback: minimal bodies, rules, request counts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator.seed import scale_ids, scale_service_id
from tests.support.cli import UNPACED, pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES, example_copy
from tests.support.seed_ids import (
    ANALYTICS,
    ENDPOINT_PROVISIONING,
    ENDPOINT_READY,
    KAFKA_PIPE,
    KINESIS_PIPE,
    OBJECT_STORAGE_PIPE,
    ORG_ID,
    POSTGRES_PAUSED_PIPE,
    POSTGRES_RUNNING_PIPE,
    STAGING,
)

REPO = Path(__file__).resolve().parent.parent


def plan_json(
    emulator: Emulator, *paths: str | Path, extra: list[str] | None = None
) -> tuple[int, dict[str, Any]]:
    """Run `plan -o json` and return its exit code and document."""
    result = run_cli(["plan", *map(str, paths), "-o", "json", *(extra or [])], emulator.env())
    assert result.stdout, result.stderr
    return result.exit_code, result.json()


def action(doc: dict[str, Any], resource: str) -> dict[str, Any]:
    """Return one action of a JSON plan."""
    found = [a for a in doc["actions"] if a["resource"] == resource]
    assert found, f"{resource} not in plan"
    return found[0]


def test_plan_should_send_only_changed_settings_in_a_merge_patch(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(settings={"streaming_max_insert_wait_ms": 5000.0, "engine_max_threads": 6})
    write_manifest(tmp_path / "p.yaml", "Pipe", "orders", spec)
    code, doc = plan_json(emulator, tmp_path)
    assert code == 0
    orders = action(doc, "Pipe/orders")
    assert orders["operation"] == "update"
    assert [r["body"] for r in orders["requests"]] == [{"settings": {"engine_max_threads": 6}}]
    assert orders["requests"][0]["method"] == "PATCH"
    assert (
        orders["requests"][0]["path"]
        == f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
    )
    change = orders["changes"][0]
    assert (change["path"], change["old"], change["new"]) == ("settings.engine_max_threads", 4, 6)
    assert change["location"]["file"].endswith("p.yaml") and change["location"]["line"] > 0


@pytest.mark.parametrize(
    ("pipe_id", "service", "kind", "fields", "body"),
    [
        pytest.param(
            KAFKA_PIPE,
            ANALYTICS,
            "kafka",
            {"caCertificate": "-----BEGIN CERT-----"},
            {"source": {"kafka": {"caCertificate": "-----BEGIN CERT-----"}}},
            id="kafka",
        ),
        pytest.param(
            OBJECT_STORAGE_PIPE,
            ANALYTICS,
            "objectStorage",
            {"path": "events/2026/**"},
            {"source": {"objectStorage": {"path": "events/2026/**"}}},
            id="objectStorage",
        ),
        pytest.param(
            KINESIS_PIPE,
            STAGING,
            "kinesis",
            {"iamRole": "arn:cloud:iam::1:role/new"},
            {"source": {"kinesis": {"iamRole": "arn:cloud:iam::1:role/new"}}},
            id="kinesis",
        ),
        pytest.param(
            POSTGRES_PAUSED_PIPE,
            ANALYTICS,
            "postgres",
            {"port": 6432, "settings": {"syncIntervalSeconds": 30}},
            {"source": {"postgres": {"port": 6432, "settings": {"syncIntervalSeconds": 30}}}},
            id="postgres",
        ),
    ],
)
def test_plan_should_build_minimal_source_body_for_each_source_kind(
    emulator: Emulator,
    tmp_path: Path,
    pipe_id: str,
    service: str,
    kind: str,
    fields: dict[str, Any],
    body: dict[str, Any],
) -> None:
    write_manifest(
        tmp_path / "p.yaml", "Pipe", "p", pipe_spec(pipe_id, service, source={kind: fields})
    )
    code, doc = plan_json(emulator, tmp_path)
    assert code == 0
    assert [r["body"] for r in action(doc, "Pipe/p")["requests"]] == [body]


def test_plan_should_report_no_changes_when_manifest_equals_live(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(
        tmp_path / "p.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 4})
    )
    result = run_cli(["plan", str(tmp_path), "--detailed-exitcode"], emulator.env())
    assert result.exit_code == 0, result.output
    assert "No changes" in result.stdout


def test_plan_should_exit_2_with_detailed_exitcode_when_changes(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(
        tmp_path / "p.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 5})
    )
    result = run_cli(["plan", str(tmp_path), "--detailed-exitcode"], emulator.env())
    assert result.exit_code == 2, result.output
    assert "~ pipe orders" in result.stdout
    assert "settings.engine_max_threads: 4 → 5" in result.stdout
    assert "Plan: 0 to create, 1 to update" in result.stdout


def _mapping(table: str, **extra: Any) -> dict[str, Any]:
    return {"sourceSchemaName": "public", "sourceTable": table, "targetTable": table, **extra}


def test_plan_should_turn_table_mappings_into_add_and_remove(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(
        POSTGRES_PAUSED_PIPE,
        source={"postgres": {"tableMappings": [_mapping("customers"), _mapping("orders")]}},
    )
    write_manifest(tmp_path / "p.yaml", "Pipe", "cdc", spec)
    _, doc = plan_json(emulator, tmp_path)
    requests = action(doc, "Pipe/cdc")["requests"]
    assert [r["body"] for r in requests] == [
        {
            "source": {
                "postgres": {
                    "tableMappingsToRemove": [
                        {
                            "sourceSchemaName": "public",
                            "sourceTable": "addresses",
                            "targetTable": "addresses",
                        }
                    ],
                    "tableMappingsToAdd": [_mapping("orders")],
                }
            }
        }
    ]
    assert requests[0]["idempotent"] is False


def test_plan_should_remove_then_add_changed_table_mapping_in_two_requests(
    emulator: Emulator, tmp_path: Path
) -> None:
    live = emulator.data()
    pipes = (
        live["pipes"]
        if isinstance(live.get("pipes"), dict)
        else {p["id"]: p for p in live["pipes"]}
    )
    current = pipes[POSTGRES_PAUSED_PIPE]["source"]["postgres"]["tableMappings"]
    customers = next(m for m in current if m["sourceTable"] == "customers")
    addresses = next(m for m in current if m["sourceTable"] == "addresses")
    changed = {**customers, "excludedColumns": ["ssn", "dob"]}
    spec = pipe_spec(
        POSTGRES_PAUSED_PIPE, source={"postgres": {"tableMappings": [changed, addresses]}}
    )
    write_manifest(tmp_path / "p.yaml", "Pipe", "cdc", spec)
    _, doc = plan_json(emulator, tmp_path)
    requests = action(doc, "Pipe/cdc")["requests"]
    key = {
        "sourceSchemaName": "public",
        "sourceTable": "customers",
        "targetTable": customers["targetTable"],
    }
    assert [r["purpose"] for r in requests] == ["remove table mappings", "add table mappings"]
    assert requests[0]["body"] == {"source": {"postgres": {"tableMappingsToRemove": [key]}}}
    assert requests[1]["body"] == {"source": {"postgres": {"tableMappingsToAdd": [changed]}}}


def test_plan_should_refuse_mapping_edit_on_running_pipe_with_the_fix(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)  # no state command: the user must pause the pipe
    spec = pipe_spec(POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": []}})
    write_manifest(tmp_path / "p.yaml", "Pipe", "billing", spec)
    write_manifest(
        tmp_path / "q.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 5})
    )
    code, doc = plan_json(emulator, tmp_path)
    assert code == 1
    billing = action(doc, "Pipe/billing")
    assert billing["operation"] == "error" and billing["requests"] == []
    assert "only be edited while the pipe is Paused (it is Running)" in billing["errors"][0]
    assert f"table mappings ({tmp_path / 'p.yaml'}:" in billing["errors"][0]
    assert "pause the pipe" in billing["errors"][0]
    # An error on one resource does not hide the plan of the others.
    assert action(doc, "Pipe/orders")["operation"] == "update"


def test_plan_should_stop_edit_and_start_a_running_pipe_where_the_server_can(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": []}})
    write_manifest(tmp_path / "p.yaml", "Pipe", "billing", spec)
    code, doc = plan_json(emulator, tmp_path)
    assert code == 0
    billing = action(doc, "Pipe/billing")
    assert billing["operation"] == "update"
    assert [(r["purpose"], r["body"]) for r in billing["requests"]][0::2] == [
        ("state command", {"command": "stop"}),
        ("state command", {"command": "start"}),
    ]
    assert billing["requests"][1]["purpose"] == "update"


def test_plan_should_report_read_only_expectation_mismatch_as_error(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(source={"kafka": {"topics": "payments"}}, destination={"table": "elsewhere"})
    write_manifest(tmp_path / "p.yaml", "Pipe", "orders", spec)
    result = run_cli(["plan", str(tmp_path)], emulator.env())
    assert result.exit_code == 1
    # Create-time fields: only a replacement changes them, and a pinned pipe is never replaced.
    assert "must be replaced (source.kafka.topics: orders → payments" in result.stdout
    assert "destination.table: orders → elsewhere" in result.stdout
    assert "pinned by spec.pipeId" in result.stdout


def test_plan_should_accept_matching_expectations_silently(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(
        tmp_path / "p.yaml",
        "Pipe",
        "orders",
        pipe_spec(source={"kafka": {"topics": "orders"}}, state="Running"),
    )
    result = run_cli(["plan", str(tmp_path), "--detailed-exitcode"], emulator.env())
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        pytest.param(ENDPOINT_PROVISIONING, "is Provisioning, not Ready", id="not-ready"),
        pytest.param("e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e99", "does not exist", id="missing"),
    ],
)
def test_plan_should_refuse_kafka_pipe_naming_an_unusable_endpoint(
    emulator: Emulator, tmp_path: Path, endpoint: str, message: str
) -> None:
    spec = pipe_spec(source={"kafka": {"reversePrivateEndpointIds": [ENDPOINT_READY, endpoint]}})
    write_manifest(tmp_path / "p.yaml", "Pipe", "orders", spec)
    code, doc = plan_json(emulator, tmp_path)
    assert code == 1
    assert any(message in e for e in action(doc, "Pipe/orders")["errors"])


def test_plan_should_check_each_endpoint_once_for_many_pipes(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=9, services=1)
    for index in (1, 5, 9):  # kafka pipes of the scale seed (one manifest per pipe)
        name, pid = scale_ids(index)
        spec = pipe_spec(
            pid,
            scale_service_id(1),
            source={"kafka": {"reversePrivateEndpointIds": [ENDPOINT_READY]}},
        )
        write_manifest(tmp_path / f"{name}.yaml", "Pipe", name, spec)
    plan_json(emulator, tmp_path)
    endpoint_gets = [r for r in emulator.requests() if "pipesReversePrivateEndpoints" in r["path"]]
    assert len(endpoint_gets) == 1


def test_plan_should_show_sensitive_change_without_value(
    emulator: Emulator, tmp_path: Path
) -> None:
    creds = {"username": {"fromEnv": "KAFKA_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    write_manifest(
        tmp_path / "p.yaml", "Pipe", "orders", pipe_spec(source={"kafka": {"credentials": creds}})
    )
    text = run_cli(["plan", str(tmp_path)], emulator.env())
    assert "source.kafka.credentials: (sensitive value changed)" in text.stdout
    for output in ("json", "markdown"):
        result = run_cli(["plan", str(tmp_path), "-o", output], emulator.env())
        assert "SECRETVALUE" not in result.output
    assert "SECRETVALUE" not in text.output


def test_plan_should_name_missing_secret_variable_and_manifest(
    emulator: Emulator, tmp_path: Path
) -> None:
    creds = {"username": {"fromEnv": "NOPE_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    write_manifest(
        tmp_path / "p.yaml", "Pipe", "orders", pipe_spec(source={"kafka": {"credentials": creds}})
    )
    result = run_cli(["plan", str(tmp_path)], emulator.env())
    assert result.exit_code == 1
    # Found before the first request: an error of the run (stderr), not a failed resource.
    assert "p.yaml:15:" in result.stderr and "NOPE_USER is not set" in result.stderr
    assert emulator.requests() == []


def test_plan_should_use_list_endpoints_and_few_requests_for_example_manifests(
    emulator: Emulator,
) -> None:
    code, doc = plan_json(emulator, EXAMPLES)
    assert code == 0
    log = emulator.requests()
    assert all(r["method"] == "GET" for r in log)
    paths = [r["path"] for r in log]
    assert paths.count(f"/v1/organizations/{ORG_ID}/services") == 1
    assert not any("/pipes/" in p for p in paths)  # no per-pipe GET: the list endpoint was used
    assert f"/v1/organizations/{ORG_ID}" in paths
    assert doc["requestsMade"]["management"] == sum(1 for p in paths if p.startswith("/v1/"))


def test_plan_should_fall_back_to_per_pipe_gets_on_spec_only_server(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    code, doc = plan_json(emulator, example_copy(tmp_path, can_create=False), extra=[*UNPACED])
    assert code == 0
    paths = [r["path"] for r in emulator.requests()]
    pipe_gets = [p for p in paths if "/pipes/" in p]
    assert len(pipe_gets) == 7
    org_reads = [r for r in emulator.requests() if r["path"] == f"/v1/organizations/{ORG_ID}"]
    assert [r["status"] for r in org_reads] == [404]  # probed once, then compared with state
    assert any("cannot read an organization" in w for a in doc["actions"] for w in a["warnings"])


def test_plan_should_complete_within_budget_under_429_and_503_storm(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(rateLimit="4/1", faultRate=0.3, faultSeed=7)
    result = run_cli(["plan", str(EXAMPLES), "-o", "json", "--rate", "8/1"], emulator.env())
    assert result.exit_code == 0, result.output
    log = emulator.requests()
    assert any(r["status"] in (429, 502, 503) or r["fault"] for r in log)
    # The client's own budget (8 per second) holds for everything it sent, 429s included.
    sent = sorted(r["time"] for r in log)
    for i in range(len(sent) - 8):
        assert sent[i + 8] - sent[i] >= 0.9, "more than 8 requests sent within one second"
    # After the first 429 the budget waits for the reset and lowers itself: 429s stay rare.
    assert sum(1 for r in log if r["status"] == 429) <= 3


def test_plan_should_limit_to_targets_with_globs(emulator: Emulator) -> None:
    code, doc = plan_json(
        emulator, EXAMPLES, extra=["--target", "pipe/o*", "--target", "Organization/*"]
    )
    assert code == 0
    assert sorted(a["resource"] for a in doc["actions"]) == ["Organization/acme", "Pipe/orders"]


def test_plan_should_reject_target_matching_nothing(emulator: Emulator) -> None:
    result = run_cli(["plan", str(EXAMPLES), "--target", "Pipe/nope"], emulator.env())
    assert result.exit_code == 1
    assert "--target Pipe/nope matches no resource" in result.stderr


def test_plan_markdown_should_start_with_summary_table_and_collapse_details(
    emulator: Emulator,
) -> None:
    result = run_cli(["plan", str(EXAMPLES), "-o", "markdown"], emulator.env())
    assert result.exit_code == 0
    text = result.stdout
    assert text.index("| | Resource |") < text.index("<details>")
    assert "`Pipe/orders`" in text and "```json" in text
    assert len(text) < 60_000


def test_plan_should_save_redacted_plan_file(emulator: Emulator, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = run_cli(
        ["plan", str(EXAMPLES), "--out", str(out), "--state", str(tmp_path / "s.json")],
        emulator.env(),
    )
    assert result.exit_code == 0
    text = out.read_text()
    assert "SECRETVALUE" not in text
    assert '"basisHash": "sha256:' in text
    assert "(sensitive)" in text


def test_plan_should_refuse_plain_http_to_remote_host(emulator: Emulator) -> None:
    env = {**emulator.env(), "RECONCILE_BASE_URL": "http://api.example.com"}
    result = run_cli(["plan", str(EXAMPLES)], env)
    assert result.exit_code == 1
    assert "refusing plain http:// to api.example.com" in result.stderr
    assert emulator.requests() == []


def test_plan_should_name_status_and_request_id_on_api_failure(emulator: Emulator) -> None:
    env = {**emulator.env(), "RECONCILE_KEY_SECRET": "wrong"}
    result = run_cli(["plan", str(EXAMPLES), "--target", "pipe/orders"], env)
    assert result.exit_code == 1
    # Refused credentials stop the run with one message (issue 16), status and requestId named.
    assert "HTTP 401" in result.stderr and "requestId" in result.stderr


def test_plan_should_send_nothing_when_a_manifest_is_invalid(
    emulator: Emulator, tmp_path: Path
) -> None:
    write_manifest(
        tmp_path / "p.yaml",
        "Pipe",
        "orders",
        pipe_spec(settings={"streaming_max_insert_wait_ms": 70000}),
    )
    result = run_cli(["plan", str(tmp_path)], emulator.env())
    assert result.exit_code == 1
    assert "greater than the maximum of 60000" in result.stderr
    assert emulator.requests() == []


def test_plan_should_report_an_unreachable_server_once_naming_the_url_to_check(
    emulator: Emulator,
) -> None:
    env = {
        **emulator.env(),
        "RECONCILE_BASE_URL": "http://127.0.0.1:1",
        "RECONCILE_DASHBOARDS_URL": "http://127.0.0.1:1",
    }
    result = run_cli(["plan", str(EXAMPLES)], env)
    assert result.exit_code == 1
    # One message instead of one per resource after half a minute of retries (issue 16).
    assert result.stdout == "" and result.stderr.count("Error:") == 1
    assert (
        "cannot reach the" in result.stderr
        and "at http://127.0.0.1:1: connection refused" in result.stderr
    )


def test_plan_json_should_match_its_published_schema(emulator: Emulator, tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads((REPO / "schemas" / "plan.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    result = run_cli(
        ["plan", str(EXAMPLES), "-o", "json", "--state", str(tmp_path / "s.json")],
        emulator.env(),
    )
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(result.json())]
    assert errors == []
