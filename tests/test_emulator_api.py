"""The emulator's API in-process: every endpoint, PATCH semantics, auth, validation, faults."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.emulator import ConnectionDropped, EmulatorApp, Identities, create_app
from reconciler.emulator.faults import SlidingWindowLimiter
from reconciler.emulator.seed import build_seed
from tests.support.emulator_app import AUTH, ORG, Client, error, ok, patch, pipe_url
from tests.support.seed_ids import (
    ANALYTICS,
    ARCHIVE,
    ENDPOINT_PROVISIONING,
    ENDPOINT_READY,
    KAFKA_CONNECTION_STRING_PIPE,
    KAFKA_IAM_USER_PIPE,
    KAFKA_MUTUAL_TLS_PIPE,
    KAFKA_PIPE,
    KINESIS_PIPE,
    OBJECT_STORAGE_PIPE,
    OTHER_ORG_ID,
    POSTGRES_PAUSED_PIPE,
    POSTGRES_RUNNING_PIPE,
    STAGING,
)

BEARER = {"Authorization": "Bearer demo-dashboards-token"}
OTHER_BEARER = {"Authorization": "Bearer other-dashboards-token"}
PIPE_FIELDS = {
    "id",
    "serviceId",
    "name",
    "state",
    "scaling",
    "source",
    "destination",
    "fieldMappings",
    "settings",
    "createdAt",
    "updatedAt",
}
TILE = {"name": "Orders", "x": 0, "y": 0, "w": 12, "h": 4, "series": [{"type": "time"}]}


@pytest.fixture
def app() -> EmulatorApp:
    """A fresh in-process emulator with the default demo credentials."""
    return create_app(identities=Identities.from_env({}))


@pytest.fixture
def client(app: EmulatorApp) -> Iterator[Client]:
    """A client of the in-process emulator authenticated with the demo key."""
    with Client(app, auth=AUTH) as test_client:
        yield test_client


# Reads.


def test_get_pipe_should_return_every_field_of_the_spec(client: Client) -> None:
    pipe = ok(client.get(pipe_url(KAFKA_PIPE)))
    assert set(pipe) >= PIPE_FIELDS
    assert pipe["source"]["kafka"]["reversePrivateEndpointIds"] == [ENDPOINT_READY]
    assert pipe["updatedAt"].endswith("Z") and len(pipe["updatedAt"]) == 24


@pytest.mark.parametrize(
    ("pipe_id", "service_id", "state"),
    [
        (KAFKA_PIPE, ANALYTICS, "Running"),
        (OBJECT_STORAGE_PIPE, ANALYTICS, "Running"),
        (KINESIS_PIPE, STAGING, "Running"),
        (POSTGRES_PAUSED_PIPE, ANALYTICS, "Paused"),
        (POSTGRES_RUNNING_PIPE, STAGING, "Running"),
    ],
)
def test_seed_should_hold_each_demo_pipe_on_its_service(
    client: Client, pipe_id: str, service_id: str, state: str
) -> None:
    assert ok(client.get(pipe_url(pipe_id, service_id)))["state"] == state


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (pipe_url("not-a-uuid"), 400),
        (pipe_url(KAFKA_PIPE, "not-a-uuid"), 400),
        ("/v1/organizations/nope/services", 400),
        (pipe_url(str(uuid.uuid4())), 404),
        (pipe_url(KAFKA_PIPE, STAGING), 404),
        (pipe_url(KAFKA_PIPE, str(uuid.uuid4())), 404),
        (f"{ORG}/services/{ANALYTICS}/pipesReversePrivateEndpoints/x", 400),
        (f"{ORG}/services/{STAGING}/pipesReversePrivateEndpoints/{ENDPOINT_READY}", 404),
        (f"{ORG}/services/{uuid.uuid4()}/backups", 404),
    ],
)
def test_path_parameters_should_be_400_when_malformed_and_404_when_unknown(
    client: Client, path: str, status: int
) -> None:
    message = error(client.get(path), status)
    assert message.startswith("BAD_REQUEST:" if status == 400 else "NOT_FOUND:")


def test_services_should_list_every_service_with_tags_and_state(client: Client) -> None:
    services = ok(client.get(f"{ORG}/services"))
    assert [s["name"] for s in services] == ["analytics", "staging", "archive"]
    assert services[2]["state"] == "idle"
    assert {"protocol": "mysql"}.items() <= services[0]["endpoints"][2].items()
    assert all("organizationId" not in s and s["engineVersion"] for s in services)


@pytest.mark.parametrize(
    ("filters", "names"),
    [
        (["tag:Environment=Production"], ["analytics", "archive"]),
        (["tag:Environment=Staging"], ["staging"]),
        (["tag:isActive"], ["analytics"]),
        (["tag:Environment=Production", "tag:isActive"], ["analytics"]),
        (["tag:Environment"], ["analytics", "staging", "archive"]),
        (["tag:Environment=Nope"], []),
    ],
)
def test_services_filter_should_and_repeated_tag_filters(
    client: Client, filters: list[str], names: list[str]
) -> None:
    services = ok(client.get(f"{ORG}/services", params=[("filter", f) for f in filters]))
    assert [s["name"] for s in services] == names


@pytest.mark.parametrize("bad", ["name:analytics", "tag:", "Environment=Production", ""])
def test_services_filter_should_reject_anything_but_tag_syntax(client: Client, bad: str) -> None:
    assert "filter" in error(client.get(f"{ORG}/services", params={"filter": bad}), 400)


def test_endpoint_should_be_read_with_its_status(client: Client) -> None:
    base = f"{ORG}/services/{ANALYTICS}/pipesReversePrivateEndpoints"
    assert ok(client.get(f"{base}/{ENDPOINT_READY}"))["status"] == "Ready"
    provisioning = ok(client.get(f"{base}/{ENDPOINT_PROVISIONING}"))
    assert (provisioning["status"], provisioning["mskAuthentication"]) == (
        "Provisioning",
        "SASL_IAM",
    )


def test_backups_should_be_newest_first_with_staging_stale() -> None:
    now = datetime.now(UTC)
    data = build_seed(now)

    def newest_done(service_id: str) -> timedelta:
        done = [b for b in data["backups"][service_id] if b["status"] == "done"]
        started = max(datetime.fromisoformat(b["startedAt"].replace("Z", "+00:00")) for b in done)
        return now - started

    assert newest_done(ANALYTICS) < timedelta(hours=3)
    assert newest_done(STAGING) > timedelta(days=3)
    assert newest_done(ARCHIVE) < timedelta(days=1)


def test_backups_endpoint_should_list_newest_first(client: Client) -> None:
    backups = ok(client.get(f"{ORG}/services/{STAGING}/backups"))
    assert backups[0]["status"] == "error" and backups[1]["status"] == "done"
    assert [b["startedAt"] for b in backups] == sorted(
        (b["startedAt"] for b in backups), reverse=True
    )


def test_extensions_should_read_the_organization_and_a_services_pipes(client: Client) -> None:
    org = ok(client.get(ORG))
    assert org["name"] == "Acme Analytics"
    assert org["privateEndpoints"] == [
        {
            "id": "pe-0a1b2c3d4e5f",
            "description": "primary VPC",
            "cloudProvider": "aws",
            "region": "us-east-1",
        }
    ]
    pipes = ok(client.get(f"{ORG}/services/{ANALYTICS}/pipes"))
    assert {p["id"] for p in pipes} == {
        KAFKA_PIPE,
        OBJECT_STORAGE_PIPE,
        POSTGRES_PAUSED_PIPE,
        KAFKA_IAM_USER_PIPE,
        KAFKA_CONNECTION_STRING_PIPE,
        KAFKA_MUTUAL_TLS_PIPE,
    }
    assert all(set(p) >= PIPE_FIELDS for p in pipes)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ORG),
        ("GET", f"{ORG}/services/{ANALYTICS}/pipes"),
        ("GET", "/api/v2/dashboards"),
        ("GET", "/api/v2/dashboards/abc"),
        ("PUT", "/api/v2/dashboards/abc"),
        ("DELETE", "/api/v2/dashboards/abc"),
    ],
)
def test_spec_only_should_hide_extensions_exactly_like_unknown_routes(
    app: EmulatorApp, client: Client, method: str, path: str
) -> None:
    app.runtime.config.spec_only = True
    headers = BEARER if path.startswith("/api") else {}
    response = client.request(method, path, headers=headers, json={"name": "x"})
    unknown = client.get(
        path.replace("/v1/", "/v1/nowhere/").replace("/api/v2/", "/api/v2/nowhere/")
    )
    assert response.status_code == unknown.status_code == 404
    assert set(response.json()) == set(unknown.json())
    assert ok(client.get(f"{ORG}/services"))  # spec routes still answer


def test_unknown_routes_should_be_404_in_each_interfaces_shape(client: Client) -> None:
    assert error(client.get("/v1/nothing"), 404).startswith("NOT_FOUND:")
    response = client.get("/api/v2/nothing", headers=BEARER)
    assert (response.status_code, response.json()) == (404, {"message": "Not Found"})


def test_wrong_method_on_a_known_route_should_be_405(client: Client) -> None:
    assert error(client.put(pipe_url(KAFKA_PIPE)), 405).startswith("METHOD_NOT_ALLOWED:")
    assert client.patch("/api/v2/dashboards", headers=BEARER).status_code == 405


# Authentication.


def _basic(pair: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        (_basic("demo-key-id:wrong"), 401),
        (_basic("nobody:demo-key-secret"), 401),
        ({"Authorization": "Basic !!!"}, 401),
        (BEARER, 401),
        (_basic("other-key-id:other-key-secret"), 403),
    ],
)
def test_management_should_refuse_missing_wrong_or_foreign_credentials(
    app: EmulatorApp, headers: dict[str, str], status: int
) -> None:
    with Client(app) as anonymous:
        message = error(anonymous.get(f"{ORG}/services", headers=headers), status)
    assert message.startswith("UNAUTHORIZED:" if status == 401 else "FORBIDDEN:")


@pytest.mark.parametrize(
    "headers",
    [{}, _basic("demo-key-id:demo-key-secret"), {"Authorization": "Bearer wrong"}],
)
def test_dashboards_should_answer_401_with_an_empty_body(
    app: EmulatorApp, headers: dict[str, str]
) -> None:
    with Client(app) as anonymous:
        response = anonymous.post("/api/v2/dashboards", headers=headers, json={"name": "x"})
    assert (response.status_code, response.content) == (401, b"")


def test_another_organizations_token_should_see_a_separate_empty_dashboard_set(
    client: Client,
) -> None:
    ok_dash = client.post("/api/v2/dashboards", headers=BEARER, json={"name": "mine"})
    assert ok_dash.status_code == 200
    assert client.get("/api/v2/dashboards", headers=OTHER_BEARER).json() == {"data": []}
    dashboard_id = ok_dash.json()["data"]["id"]
    assert client.get(f"/api/v2/dashboards/{dashboard_id}", headers=OTHER_BEARER).status_code == 404


# Pipe PATCH semantics.


def test_patch_should_merge_settings_and_leave_absent_fields_unchanged(client: Client) -> None:
    before = ok(client.get(pipe_url(KAFKA_PIPE)))
    after = ok(patch(client, KAFKA_PIPE, {"settings": {"streaming_max_insert_wait_ms": 7000.0}}))
    assert after["settings"]["streaming_max_insert_wait_ms"] == 7000
    assert after["settings"]["engine_max_threads"] == before["settings"]["engine_max_threads"]
    assert after["fieldMappings"] == before["fieldMappings"] and after["name"] == "orders"
    assert ok(client.get(pipe_url(KAFKA_PIPE))) == after


def test_patch_should_replace_arrays_whole(client: Client) -> None:
    endpoint_ids = [ENDPOINT_PROVISIONING, ENDPOINT_READY]
    body = {
        "fieldMappings": [{"sourceField": "a", "destinationField": "b"}],
        "destination": {"columns": [{"name": "b", "type": "String"}]},
        "source": {"kafka": {"reversePrivateEndpointIds": endpoint_ids}},
    }
    after = ok(patch(client, KAFKA_PIPE, body))
    assert after["fieldMappings"] == body["fieldMappings"]
    assert after["destination"]["columns"] == [{"name": "b", "type": "String"}]
    assert after["destination"]["table"] == "orders"
    assert after["source"]["kafka"]["reversePrivateEndpointIds"] == endpoint_ids
    assert after["source"]["kafka"]["topics"] == "orders"


def test_patch_should_merge_postgres_settings(client: Client) -> None:
    body = {"source": {"postgres": {"port": 6543, "settings": {"pullBatchSize": 500}}}}
    postgres = ok(patch(client, POSTGRES_PAUSED_PIPE, body))["source"]["postgres"]
    assert (postgres["port"], postgres["settings"]["pullBatchSize"]) == (6543, 500)
    assert postgres["settings"]["syncIntervalSeconds"] == 60


def _mapping(table: str, **extra: Any) -> dict[str, Any]:
    return {"sourceSchemaName": "public", "sourceTable": table, "targetTable": table, **extra}


def test_patch_should_remove_then_add_table_mappings(client: Client) -> None:
    body = {
        "source": {
            "postgres": {
                "tableMappingsToRemove": [_mapping("addresses")],
                "tableMappingsToAdd": [
                    _mapping("orders", sortingKeys=["id"], tableEngine="MergeTree")
                ],
            }
        }
    }
    mappings = ok(patch(client, POSTGRES_PAUSED_PIPE, body))["source"]["postgres"]["tableMappings"]
    assert [m["sourceTable"] for m in mappings] == ["customers", "orders"]
    assert mappings[1]["tableEngine"] == "MergeTree" and mappings[1]["sortingKeys"] == ["id"]


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"tableMappingsToAdd": [_mapping("customers")]}, "already exists"),
        ({"tableMappingsToRemove": [_mapping("nothing")]}, "does not exist"),
        (
            {
                "tableMappingsToAdd": [_mapping("customers")],
                "tableMappingsToRemove": [_mapping("customers")],
            },
            "cannot be added and removed in one request",
        ),
    ],
)
def test_patch_should_reject_inconsistent_table_mapping_edits(
    client: Client, changes: dict[str, Any], fragment: str
) -> None:
    before = ok(client.get(pipe_url(POSTGRES_PAUSED_PIPE)))
    message = error(patch(client, POSTGRES_PAUSED_PIPE, {"source": {"postgres": changes}}), 400)
    assert message.startswith("BAD_REQUEST:") and fragment in message
    assert ok(client.get(pipe_url(POSTGRES_PAUSED_PIPE))) == before


def test_patch_should_require_a_paused_postgres_pipe_for_table_mapping_edits(
    client: Client,
) -> None:
    body = {"source": {"postgres": {"tableMappingsToAdd": [_mapping("refunds")]}}}
    message = error(patch(client, POSTGRES_RUNNING_PIPE, body, STAGING), 400)
    assert message == "BAD_REQUEST: Postgres pipe must be paused to edit"
    assert (
        ok(patch(client, POSTGRES_RUNNING_PIPE, {"name": "billing"}, STAGING))["name"] == "billing"
    )


def test_patch_should_answer_424_when_the_service_is_idle(app: EmulatorApp, client: Client) -> None:
    app.runtime.store.data["pipes"][KINESIS_PIPE]["serviceId"] = ARCHIVE
    assert error(patch(client, KINESIS_PIPE, {"name": "x"}, ARCHIVE), 424).startswith(
        "FAILED_DEPENDENCY:"
    )


def test_patch_should_reject_any_update_of_a_completed_pipe(
    app: EmulatorApp, client: Client
) -> None:
    app.runtime.store.data["pipes"][KAFKA_PIPE]["state"] = "Completed"
    assert "Completed" in error(patch(client, KAFKA_PIPE, {"name": "x"}), 400)


def test_patch_should_reject_a_source_of_another_kind(client: Client) -> None:
    message = error(patch(client, KAFKA_PIPE, {"source": {"kinesis": {"iamRole": "r"}}}), 400)
    assert "source.kinesis" in message


def test_patch_should_store_secrets_but_never_return_them(app: EmulatorApp, client: Client) -> None:
    credentials = {"username": "u", "password": "p4ss"}
    body = {"source": {"kafka": {"credentials": credentials}, "validateSamples": True}}
    response = patch(client, KAFKA_PIPE, body)
    assert "p4ss" not in response.text and "credentials" not in response.text
    assert "validateSamples" not in response.text
    stored = app.runtime.store.data["pipes"][KAFKA_PIPE]["source"]
    assert stored["kafka"]["credentials"] == credentials and "validateSamples" not in stored
    access = {"accessKeyId": "AKID", "secretKey": "s3cret"}
    shown = patch(client, KINESIS_PIPE, {"source": {"kinesis": {"accessKey": access}}}, STAGING)
    assert shown.status_code == 200 and "s3cret" not in shown.text and "accessKey" not in shown.text


def test_patch_should_return_the_connection_string_masked(client: Client) -> None:
    secret = "AccountName=acct;AccountKey=c2VjcmV0;EndpointSuffix=example.com"
    body = {"source": {"objectStorage": {"connectionString": secret}}}
    shown = ok(patch(client, OBJECT_STORAGE_PIPE, body))["source"]["objectStorage"][
        "connectionString"
    ]
    assert shown == "AccountName=acct;AccountKey=****;EndpointSuffix=example.com"
    assert "c2VjcmV0" not in client.get(pipe_url(OBJECT_STORAGE_PIPE)).text


def test_patch_should_move_updated_at_only_when_something_changed(client: Client) -> None:
    first = ok(patch(client, KAFKA_PIPE, {"name": "orders-2"}))["updatedAt"]
    second = ok(patch(client, KAFKA_PIPE, {"name": "orders-3"}))["updatedAt"]
    unchanged = ok(patch(client, KAFKA_PIPE, {"name": "orders-3"}))["updatedAt"]
    empty = ok(patch(client, KAFKA_PIPE, {}))["updatedAt"]
    assert "2024-06-15T12:30:00.000Z" < first < second == unchanged == empty


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"scaling": {"replicas": 3}}, "scaling is not an allowed field"),
        ({"state": "Paused"}, "state is not an allowed field"),
        (
            {"source": {"kafka": {"brokers": "b:9092"}}},
            "source.kafka.brokers is not an allowed field",
        ),
        ({"destination": {"table": "t"}}, "destination.table is not an allowed field"),
        (
            {"settings": {"streaming_max_insert_wait_ms": 70000}},
            "settings.streaming_max_insert_wait_ms must be between 500 and 60000",
        ),
        (
            {"settings": {"object_storage_concurrency": 0}},
            "settings.object_storage_concurrency must be between",
        ),
        (
            {"settings": {"engine_max_threads": True}},
            "settings.engine_max_threads must be an integer",
        ),
        (
            {"settings": {"engine_max_threads": 1.5}},
            "settings.engine_max_threads must be an integer",
        ),
        (
            {"settings": {"engine_max_threads": "4"}},
            "settings.engine_max_threads must be an integer",
        ),
        (
            {"settings": {"engine_parallel_view_processing": 1}},
            "settings.engine_parallel_view_processing must be a boolean",
        ),
        ({"settings": {"nope": 1}}, "settings.nope is not an allowed field"),
        ({"name": ""}, "name must be between 1 and 255"),
        ({"name": "x" * 256}, "name must be between 1 and 255"),
        ({"name": 5}, "name must be a string"),
        ({"fieldMappings": [{"sourceField": "a"}]}, "fieldMappings.0.destinationField is required"),
        ({"fieldMappings": {"a": "b"}}, "fieldMappings must be an array"),
        (
            {"source": {"postgres": {"port": 70000}}},
            "source.postgres.port must be between 1 and 65535",
        ),
        (
            {"source": {"postgres": {"settings": {"syncIntervalSeconds": 0}}}},
            "source.postgres.settings.syncIntervalSeconds must be at least 1",
        ),
        (
            {"source": {"postgres": {"tableMappingsToAdd": [_mapping("t", tableEngine="Log")]}}},
            "source.postgres.tableMappingsToAdd.0.tableEngine must be one of",
        ),
        (
            {"source": {"kafka": {"reversePrivateEndpointIds": ["nope"]}}},
            "source.kafka.reversePrivateEndpointIds.0 must be a uuid",
        ),
        (
            {"source": {"kafka": {"credentials": {"username": "u"}}}},
            "source.kafka.credentials.password is required",
        ),
        ({"source": {"validateSamples": "yes"}}, "source.validateSamples must be a boolean"),
        ([], "body must be a JSON object"),
        ("name", "body must be a JSON object"),
    ],
)
def test_patch_should_reject_invalid_bodies_naming_the_field(
    client: Client, body: Any, fragment: str
) -> None:
    message = error(patch(client, KAFKA_PIPE, body), 400)
    assert message.startswith("BAD_REQUEST:") and fragment in message


@pytest.mark.parametrize("raw", [b"{", b"", b"\xff\xfe", b"[" * 100000])
def test_patch_should_answer_400_to_malformed_json(client: Client, raw: bytes) -> None:
    response = client.patch(
        pipe_url(KAFKA_PIPE), content=raw, headers={"Content-Type": "application/json"}
    )
    assert error(response, 400).startswith("BAD_REQUEST:")


# Organization PATCH.


def test_organization_patch_should_rename_and_remove_then_add_private_endpoints(
    client: Client,
) -> None:
    body = {
        "name": "Acme",
        "privateEndpoints": {
            "remove": [{"id": "pe-0a1b2c3d4e5f", "description": "primary VPC"}],
            "add": [{"id": "pe-new", "description": "secondary"}],
        },
    }
    org = ok(client.patch(ORG, json=body))
    assert (org["name"], org["privateEndpoints"]) == (
        "Acme",
        [
            {
                "id": "pe-new",
                "description": "secondary",
                "cloudProvider": "aws",
                "region": "us-east-1",
            }
        ],
    )
    assert ok(client.get(ORG)) == org


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            {"privateEndpoints": {"add": [{"id": "pe-0a1b2c3d4e5f", "description": "d"}]}},
            "already present",
        ),
        (
            {"privateEndpoints": {"remove": [{"id": "pe-missing", "description": "d"}]}},
            "is not present",
        ),
        ({"name": ""}, "name must be between 1 and 255"),
        ({"privateEndpoints": {"replace": []}}, "privateEndpoints.replace is not an allowed field"),
        ({"byocConfig": []}, "byocConfig is not an allowed field"),
    ],
)
def test_organization_patch_should_reject_bad_edits(
    client: Client, body: Any, fragment: str
) -> None:
    assert fragment in error(client.patch(ORG, json=body), 400)


def test_organization_patch_should_be_403_for_another_organization(client: Client) -> None:
    assert error(client.patch(f"/v1/organizations/{OTHER_ORG_ID}", json={"name": "x"}), 403)


# Dashboards.


def test_dashboard_post_should_assign_ids_and_echo_exactly_what_was_sent(
    client: Client,
) -> None:
    body = {"name": "Ops", "tiles": [TILE, {**TILE, "x": 12}], "tags": ["ops"]}
    response = client.post("/api/v2/dashboards", headers=BEARER, json=body)
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"id", "name", "tiles", "tags"}
    assert [{k: v for k, v in t.items() if k != "id"} for t in data["tiles"]] == body["tiles"]
    assert len({t["id"] for t in data["tiles"]} | {data["id"]}) == 3
    bare = client.post("/api/v2/dashboards", headers=BEARER, json={"name": "Bare"}).json()["data"]
    assert set(bare) == {"id", "name"}


def test_dashboard_extensions_should_list_get_replace_and_delete(client: Client) -> None:
    created = client.post("/api/v2/dashboards", headers=BEARER, json={"name": "A", "tiles": [TILE]})
    dashboard = created.json()["data"]
    url = f"/api/v2/dashboards/{dashboard['id']}"
    assert client.get("/api/v2/dashboards", headers=BEARER).json() == {"data": [dashboard]}
    assert client.get(url, headers=BEARER).json() == {"data": dashboard}
    kept = dashboard["tiles"][0]
    body = {"name": "B", "tiles": [{**kept, "w": 6}, TILE], "tags": ["t"]}
    replaced = client.put(url, headers=BEARER, json=body).json()["data"]
    assert replaced["name"] == "B" and replaced["tiles"][0]["id"] == kept["id"]
    assert replaced["tiles"][1]["id"] not in (kept["id"], None)
    assert client.delete(url, headers=BEARER).json() == {"data": {"id": dashboard["id"]}}
    assert client.get(url, headers=BEARER).status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tiles": []}, "Body validation failed: name: is required"),
        (
            {"name": "d", "tiles": [{**TILE, "x": 24}]},
            "Body validation failed: tiles.0.x: must be between 0 and 23",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "x": -1}]},
            "Body validation failed: tiles.0.x: must be between 0 and 23",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "w": 0}]},
            "Body validation failed: tiles.0.w: must be between 1 and 24",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "w": 25}]},
            "Body validation failed: tiles.0.w: must be between 1 and 24",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "y": -1}]},
            "Body validation failed: tiles.0.y: must be at least 0",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "h": 0}]},
            "Body validation failed: tiles.0.h: must be at least 1",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "series": [{"type": "pie"}]}]},
            "Body validation failed: tiles.0.series.0.type: must be one of time, table, number, search, markdown",
        ),
        (
            {"name": "d", "tiles": [{**TILE, "series": [{"type": "time", "dataSource": "logs"}]}]},
            "Body validation failed: tiles.0.series.0.dataSource: must be one of events, metrics",
        ),
        ([], "Body validation failed: body must be a JSON object"),
    ],
)
def test_dashboard_post_should_reject_invalid_bodies(
    client: Client, body: Any, message: str
) -> None:
    response = client.post("/api/v2/dashboards", headers=BEARER, json=body)
    assert (response.status_code, response.json()) == (400, {"message": message})


def test_dashboard_post_should_reject_malformed_json(client: Client) -> None:
    response = client.post("/api/v2/dashboards", headers=BEARER, content=b"{nope")
    assert response.status_code == 400 and response.json()["message"].startswith(
        "Body validation failed"
    )


# Rate limit, faults, latency.


def test_rate_limit_should_answer_429_with_reset_headers_per_key(
    app: EmulatorApp, client: Client
) -> None:
    app.runtime.config.rate_limit = (2, 10.0)
    app.runtime.apply_config()
    assert [client.get(f"{ORG}/services").status_code for _ in range(2)] == [200, 200]
    limited = client.get(f"{ORG}/services")
    assert error(limited, 429).startswith("TOO_MANY_REQUESTS:")
    assert 9 < float(limited.headers["X-RateLimit-Reset"]) <= 10
    assert int(limited.headers["Retry-After"]) == 10
    other = client.get(f"{ORG}/services", auth=("other-key-id", "other-key-secret"))
    assert other.status_code == 403  # a different key has its own window
    assert client.post("/api/v2/dashboards", headers=BEARER, json={"name": "d"}).status_code == 200


def test_sliding_window_should_not_count_rejected_requests() -> None:
    limiter = SlidingWindowLimiter(2, 10)
    assert limiter.admit("k", 0.0) is None and limiter.admit("k", 1.0) is None
    assert limiter.admit("k", 5.0) == pytest.approx(5.0)
    assert limiter.admit("k", 9.0) == pytest.approx(1.0)
    assert limiter.admit("k", 10.0) is None  # the slot of t=0 freed; rejections left no trace
    assert limiter.admit("k", 10.5) == pytest.approx(0.5)


def test_faults_should_produce_502_503_and_drops_and_be_logged(
    app: EmulatorApp, client: Client
) -> None:
    app.runtime.config.fault_rate = 1.0
    app.runtime.config.fault_seed = 7
    app.runtime.apply_config()
    seen = set()
    for _ in range(30):
        try:
            seen.add(client.patch(pipe_url(KAFKA_PIPE), json={"name": "x"}).status_code)
        except ConnectionDropped:
            seen.add("drop")
    assert seen == {502, 503, "drop"}
    faults = {entry["fault"] for entry in app.runtime.log}
    assert {"502", "503"} <= faults and faults & {"drop", "drop-after-apply"}
    applied = "drop-after-apply" in faults
    assert (app.runtime.store.data["pipes"][KAFKA_PIPE]["name"] == "x") == applied


def test_5xx_faults_should_never_apply_the_write(app: EmulatorApp, client: Client) -> None:
    app.runtime.config.fault_rate = 1.0
    app.runtime.apply_config()
    app.runtime.injector.decide = lambda: "503"  # type: ignore[method-assign]
    assert error(patch(client, KAFKA_PIPE, {"name": "x"}), 503).startswith("SERVICE_UNAVAILABLE:")
    assert app.runtime.store.data["pipes"][KAFKA_PIPE]["name"] == "orders"


def test_latency_should_delay_requests_concurrently(app: EmulatorApp) -> None:
    app.runtime.config.latency_ms = 200

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://emu", auth=AUTH) as http:
            responses = await asyncio.gather(*(http.get(f"{ORG}/services") for _ in range(5)))
        return [r.status_code for r in responses]

    started = time.monotonic()
    assert asyncio.run(burst()) == [200] * 5
    assert time.monotonic() - started >= 0.2  # the injected latency was served


# Admin paths and persistence.


def test_request_log_should_record_api_requests_but_not_admin_ones(client: Client) -> None:
    patch(client, KAFKA_PIPE, {"name": "x"})
    client.get(f"{ORG}/services", params={"filter": "tag:isActive"})
    log = ok(client.get("/_emulator/requests"))
    assert [(e["method"], e["status"]) for e in log] == [("PATCH", 200), ("GET", 200)]
    assert log[0]["body"] == {"name": "x"} and log[1]["query"] == "filter=tag%3AisActive"
    assert set(log[0]) == {
        "method",
        "path",
        "query",
        "body",
        "status",
        "requestId",
        "fault",
        "time",
    }


def test_admin_should_reset_configure_and_force_states(app: EmulatorApp, client: Client) -> None:
    patch(client, KAFKA_PIPE, {"name": "x"})
    ok(client.post(f"/_emulator/pipes/{POSTGRES_RUNNING_PIPE}/state", json={"state": "Paused"}))
    ok(
        client.post(
            f"/_emulator/endpoints/{ENDPOINT_PROVISIONING}/status", json={"status": "Ready"}
        )
    )
    ok(client.post(f"/_emulator/services/{ANALYTICS}/state", json={"state": "stopped"}))
    assert error(patch(client, KAFKA_PIPE, {"name": "y"}), 424)
    data = ok(client.get("/_emulator/data"))
    assert data["pipes"][POSTGRES_RUNNING_PIPE]["state"] == "Paused"
    assert data["reversePrivateEndpoints"][ENDPOINT_PROVISIONING]["status"] == "Ready"
    config = ok(client.post("/_emulator/config", json={"specOnly": True, "rateLimit": "10/10"}))
    assert config == ok(client.get("/_emulator/config"))
    assert (config["specOnly"], config["rateLimit"]) == (True, "10/10")
    assert error(client.post("/_emulator/config", json={"rateLimit": "ten"}), 400)
    assert error(
        client.post(f"/_emulator/pipes/{KAFKA_PIPE}/state", json={"state": "Dancing"}), 400
    )
    assert ok(client.post("/_emulator/reset", json={"seedPipes": 8, "services": 2})) == {
        "seedPipes": 8,
        "services": 2,
    }
    assert (
        len(app.runtime.store.data["pipes"]) == 16 and ok(client.get("/_emulator/requests")) == []
    )
    ok(client.post("/_emulator/reset"))
    assert app.runtime.store.data["pipes"][KAFKA_PIPE]["name"] == "orders"


def test_admin_should_require_the_demo_key(app: EmulatorApp) -> None:
    with Client(app) as anonymous:
        assert error(anonymous.get("/_emulator/requests"), 401)
        assert error(
            anonymous.get("/_emulator/data", auth=("other-key-id", "other-key-secret")), 403
        )


def test_data_file_should_persist_changes_across_restarts(tmp_path: Path) -> None:
    data_file = tmp_path / "emulator.json"
    first = create_app(identities=Identities.from_env({}), data_file=data_file)
    with Client(first, auth=AUTH) as client:
        ok(patch(client, KAFKA_PIPE, {"name": "persisted"}))
    assert json.loads(data_file.read_text())["pipes"][KAFKA_PIPE]["name"] == "persisted"
    second = create_app(identities=Identities.from_env({}), data_file=data_file)
    with Client(second, auth=AUTH) as client:
        assert ok(client.get(pipe_url(KAFKA_PIPE)))["name"] == "persisted"
    assert [p.name for p in tmp_path.iterdir()] == ["emulator.json"]


def test_scale_seed_should_build_ten_thousand_realistic_pipes() -> None:
    data = build_seed(datetime.now(UTC), seed_pipes=10_000, services=3)
    assert len(data["pipes"]) == 10_008 and KAFKA_PIPE in data["pipes"]
    scale = [p for p in data["pipes"].values() if p["name"].startswith("pipe-")]
    assert [next(iter(p["source"])) for p in scale[:5]] == [
        "kafka",
        "objectStorage",
        "kinesis",
        "postgres",
        "kafka",
    ]
    assert scale[0]["name"] == "pipe-00001" and len({p["serviceId"] for p in scale}) == 3
    again = build_seed(datetime.now(UTC), seed_pipes=10, services=3)
    assert [p["id"] for p in scale[:10]] == [p["id"] for p in again["pipes"].values()][8:]


def test_unexpected_errors_should_be_500_envelopes_not_crashes(
    app: EmulatorApp, client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    del app.runtime.store.data["pipes"][KAFKA_PIPE]["source"]
    message = error(client.get(pipe_url(KAFKA_PIPE)), 500)
    assert message.startswith("INTERNAL_SERVER_ERROR:")
    assert "Traceback" in capsys.readouterr().err
    assert ok(client.get(pipe_url(KINESIS_PIPE, STAGING)))
