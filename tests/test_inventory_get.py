"""`reconcile get …` against the emulator on loopback: tables for people, JSON/YAML for scripts."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from ruamel.yaml import YAML

from tests.support.emulator import Emulator
from tests.support.inventory import ISO, api_paths, invoke
from tests.support.seed_ids import (
    ANALYTICS,
    ENDPOINT_READY,
    KAFKA_PIPE,
    OBJECT_STORAGE_PIPE,
    ORG_ID,
    STAGING,
)


def load_yaml(text: str) -> Any:
    """Parse YAML output."""
    return YAML(typ="safe", pure=True).load(text)


def test_services_table_lists_every_service_with_tags_and_utc_times(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "services")
    assert out.code == 0
    lines = out.output.splitlines()
    assert lines[0].split() == [
        "NAME", "ID", "STATE", "TAGS", "VERSION", "REPLICAS", "MEMORY", "REGION", "TIER",
        "CREATED",
    ]  # fmt: skip
    assert [line.split()[0] for line in lines[1:]] == ["analytics", "staging", "archive"]
    assert "Environment=Production,isActive" in lines[1]
    assert re.search(ISO, lines[1])
    # aligned: the ID column starts at the same offset on every line
    offsets = {line.index("3f6a1c2e") for line in lines[1:]}
    assert offsets == {lines[0].index("ID")}


def test_services_filter_is_sent_to_the_server_and_narrows_the_list(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "services", "--filter", "tag:Environment=Production")
    assert out.code == 0
    names = [line.split()[0] for line in out.output.splitlines()[1:]]
    assert names == ["analytics", "archive"]
    assert any("filter=tag%3AEnvironment%3DProduction" in str(r) for r in emulator.requests())


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_services_json_and_yaml_print_the_objects(emulator: Emulator, fmt: str) -> None:
    out = invoke(emulator, "get", "services", "--output", fmt)
    assert out.code == 0
    data = json.loads(out.output) if fmt == "json" else load_yaml(out.output)
    assert [s["id"] for s in data][:2] == [ANALYTICS, STAGING]
    assert data[0]["endpoints"][0]["protocol"] == "https"


def test_backups_table_shows_human_sizes_durations_and_newest_first(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "backups", "--service", "analytics")
    assert out.code == 0
    lines = out.output.splitlines()
    assert lines[0].split() == ["STARTED", "STATUS", "TYPE", "SIZE", "DURATION", "NAME", "ID"]
    assert len(lines) == 5
    assert re.match(rf"^{ISO}  done    incremental  5\.0 GiB  7m 2s ", lines[1])
    assert lines[4].split()[1:4] == ["error", "full", "0"]
    started = [line.split()[0] for line in lines[1:]]
    assert started == sorted(started, reverse=True)


def test_backups_since_keeps_only_recent_ones(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "backups", "--service", "staging", "--since", "3d")
    assert out.code == 0
    rows = out.output.splitlines()[1:]
    assert len(rows) == 1 and rows[0].split()[1] == "error"


def test_backups_by_service_id_costs_no_services_request(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "backups", "--service", STAGING, "-o", "json")
    assert out.code == 0
    assert {b["serviceId"] for b in json.loads(out.output)} == {STAGING}
    assert api_paths(emulator) == [f"/v1/organizations/{ORG_ID}/services/{STAGING}/backups"]


def test_endpoint_shows_status_and_dns_names(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "endpoint", ENDPOINT_READY, "--service", "analytics")
    assert out.code == 0
    assert re.search(r"^Status:\s+Ready$", out.output, re.M)
    assert "vpce-0f1e2d3c4b5a69788.vpce-svc.us-east-1.example.com" in out.output
    as_json = invoke(
        emulator, "get", "endpoint", ENDPOINT_READY, "--service", ANALYTICS, "-o", "json"
    )
    assert json.loads(as_json.output)["id"] == ENDPOINT_READY


def test_endpoints_lists_every_reverse_private_endpoint_of_a_service(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "endpoints", "--service", "analytics")
    assert out.code == 0, out.output
    header, *rows = out.output.splitlines()
    assert header.split()[:2] == ["DESCRIPTION", "ID"]
    assert any(ENDPOINT_READY in row and "Ready" in row for row in rows), out.output
    as_json = invoke(emulator, "get", "endpoints", "--service", ANALYTICS, "-o", "json")
    assert ENDPOINT_READY in [e["id"] for e in json.loads(as_json.output)]


def test_cdc_scaling_shows_a_services_capacity_or_why_it_has_none(emulator: Emulator) -> None:
    shown = invoke(emulator, "get", "cdc-scaling", "--service", "analytics")
    assert shown.code == 0, shown.output
    assert re.search(r"^CPU \(millicores\):\s+\d+$", shown.output, re.M), shown.output
    assert re.search(r"^Memory \(GB\):\s+\d+", shown.output, re.M), shown.output
    refused = invoke(emulator, "get", "cdc-scaling", "--service", "archive")
    assert refused.code == 1
    assert "no database pipe" in refused.error, refused.error


def test_pipe_by_name_is_resolved_through_the_service_pipe_list(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "pipe", "orders", "--service", "analytics")
    assert out.code == 0
    assert re.search(rf"^ID:\s+{KAFKA_PIPE}$", out.output, re.M)
    assert re.search(r"^Destination:\s+sales\.orders$", out.output, re.M)
    assert re.search(r"^Scaling:\s+2 × \(500m CPU, 2\.0 GiB\), concurrency 2$", out.output, re.M)
    assert api_paths(emulator)[-1].endswith(f"/services/{ANALYTICS}/pipes")


def test_pipe_by_id_prints_yaml_with_secrets_masked(emulator: Emulator) -> None:
    with httpx.Client(auth=(emulator.key_id, emulator.key_secret)) as http:
        http.patch(
            f"{emulator.url}/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{OBJECT_STORAGE_PIPE}",
            json={"source": {"objectStorage": {"connectionString": "AccountKey=TOPSECRET42"}}},
        ).raise_for_status()
    out = invoke(emulator, "get", "pipe", OBJECT_STORAGE_PIPE, "--service", ANALYTICS, "-o", "yaml")
    assert out.code == 0
    pipe = load_yaml(out.output)
    assert pipe["id"] == OBJECT_STORAGE_PIPE
    assert pipe["source"]["objectStorage"]["connectionString"] == "(sensitive)"
    assert "TOPSECRET42" not in out.output


def test_pipes_lists_every_pipe_of_a_service(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "pipes", "--service", "analytics")
    assert out.code == 0
    rows = out.output.splitlines()[1:]
    assert [r.split()[0] for r in rows] == [
        "orders",
        "events-archive",
        "customers-cdc",
        "payments",
        "telemetry",
        "audit-log",
    ]
    assert "postgres db.example.com:5432/crm (2 tables)" in out.output


def test_organization_shows_name_and_private_endpoints(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "organization")
    assert out.code == 0
    assert re.search(r"^Name:\s+Acme Analytics$", out.output, re.M)
    assert "pe-0a1b2c3d4e5f (primary VPC)" in out.output
    assert re.search(r"^Created:\s+2023-11-20T08:15:00Z$", out.output, re.M)


def test_spec_only_server_cannot_show_the_organization(emulator: Emulator) -> None:
    emulator.configure(specOnly=True)
    out = invoke(emulator, "get", "organization")
    assert out.code == 1
    assert "cannot read an organization" in out.error


def test_spec_only_server_needs_pipes_by_id(emulator: Emulator) -> None:
    emulator.configure(specOnly=True)
    by_name = invoke(emulator, "get", "pipe", "orders", "--service", "analytics")
    assert by_name.code == 1
    assert "give the pipe by id" in by_name.error
    listed = invoke(emulator, "get", "pipes", "--service", "analytics")
    assert listed.code == 1 and "does not list the pipes" in listed.error
    by_id = invoke(emulator, "get", "pipe", KAFKA_PIPE, "--service", "analytics")
    assert by_id.code == 0 and "orders" in by_id.output


def test_dashboards_are_listed_with_their_tile_count(emulator: Emulator) -> None:
    with httpx.Client(headers={"Authorization": f"Bearer {emulator.token}"}) as http:
        http.post(
            f"{emulator.url}/api/v2/dashboards",
            json={
                "name": "Ops",
                "tags": ["ops"],
                "tiles": [
                    {"name": "t", "x": 0, "y": 0, "w": 4, "h": 2, "series": [{"type": "time"}]}
                ],
            },
        ).raise_for_status()
    out = invoke(emulator, "get", "dashboards")
    assert out.code == 0
    row = out.output.splitlines()[1].split()
    assert row[0] == "Ops" and row[2:] == ["1", "ops"]
    assert (
        json.loads(invoke(emulator, "get", "dashboards", "-o", "json").output)[0]["name"] == "Ops"
    )


def test_unknown_service_name_lists_the_known_ones(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "pipes", "--service", "nope")
    assert out.code == 1
    assert "service 'nope' not found" in out.error and "analytics" in out.error


def test_missing_organization_is_a_configuration_error(emulator: Emulator) -> None:
    out = invoke(emulator, "get", "services", env={"RECONCILE_ORGANIZATION_ID": ""})
    assert out.code == 1
    assert "no organization" in out.error
