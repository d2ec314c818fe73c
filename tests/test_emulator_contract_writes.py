"""The contract's write operations beyond the spec, on the emulator: a pipe's settings, CDC
scaling, reverse private endpoints and schema discovery.

Each answer — success or error — is checked against the management contract. The emulator's
clock is moved by hand (no sleeping) to see an endpoint become Ready.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.contract_exchange import exchange
from tests.support.emulator_app import TRANSITION_MS, Client, Clock, error, ok
from tests.support.seed_ids import (
    ANALYTICS,
    ARCHIVE,
    ENDPOINT_READY,
    KAFKA_PIPE,
    KINESIS_PIPE,
    ORG_ID,
    STAGING,
)

SERVICE = "/v1/organizations/{organizationId}/services/{serviceId}"
SETTINGS = SERVICE + "/pipes/{pipeId}/settings"
CDC = SERVICE + "/pipesCdcScaling"
ENDPOINTS = SERVICE + "/pipesReversePrivateEndpoints"
ENDPOINT = ENDPOINTS + "/{reversePrivateEndpointId}"
DISCOVERY = SERVICE + "/pipes/schemaDiscovery"
PIPE = SERVICE + "/pipes/{pipeId}"


def send(client: Client, method: str, template: str, body: Any = None, **ids: str) -> Any:
    """The result of a call the contract must accept (status 200, answer within it)."""
    return ok(exchange(client, method, template, body, **ids))


def refuse(client: Client, method: str, template: str, body: Any = None, **ids: str) -> str:
    """The message of a 400 answered within the contract's error body."""
    return error(exchange(client, method, template, body, **ids), 400)


# A pipe's settings.


def test_settings_should_read_as_the_pipe_shows_them(client: Client) -> None:
    settings = send(client, "GET", SETTINGS, serviceId=ANALYTICS, pipeId=KAFKA_PIPE)
    pipe = send(client, "GET", PIPE, serviceId=ANALYTICS, pipeId=KAFKA_PIPE)
    assert settings == pipe["settings"] and settings["engine_max_threads"] == 4


def test_put_settings_should_replace_them_whole_with_defaults_for_the_rest(
    client: Client,
) -> None:
    ids = {"serviceId": ANALYTICS, "pipeId": KAFKA_PIPE}
    body = {"engine_max_threads": 16, "streaming_max_insert_wait_ms": None}
    settings = send(client, "PUT", SETTINGS, body, **ids)
    assert settings["engine_max_threads"] == 16
    assert settings["streaming_max_insert_wait_ms"] == 5000  # null: the default
    assert settings["object_storage_concurrency"] == 25  # left out: the default (was 8)
    assert send(client, "GET", PIPE, **ids)["settings"] == settings


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"engine_max_threads": 65}, "engine_max_threads must be between 0 and 64"),
        ({"engine_max_threads": "8"}, "engine_max_threads must be an integer"),
        ({"no_such_setting": 1}, "no_such_setting is not an allowed field"),
        ([], "Request body must be a JSON object"),
    ],
)
def test_put_settings_should_refuse_what_the_contract_refuses(
    client: Client, body: Any, message: str
) -> None:
    text = refuse(client, "PUT", SETTINGS, body, serviceId=ANALYTICS, pipeId=KAFKA_PIPE)
    assert text == "BAD_REQUEST: " + message


# CDC scaling.


def test_cdc_scaling_should_exist_for_a_service_with_a_database_pipe(client: Client) -> None:
    scaling = send(client, "GET", CDC, serviceId=STAGING)
    assert scaling == {"replicaCpuMillicores": 2000, "replicaMemoryGb": 8}


def test_cdc_scaling_should_be_400_for_a_service_without_a_database_pipe(
    client: Client,
) -> None:
    assert "has no database pipe" in refuse(client, "GET", CDC, serviceId=ARCHIVE)
    body = {"replicaCpuMillicores": 4000}
    assert "has no database pipe" in refuse(client, "PATCH", CDC, body, serviceId=ARCHIVE)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"replicaCpuMillicores": 4000}, (4000, 16)),
        ({"replicaMemoryGb": 32}, (8000, 32)),
        ({"replicaCpuMillicores": 1000, "replicaMemoryGb": 4}, (1000, 4)),
        ({}, (2000, 8)),
    ],
)
def test_cdc_scaling_should_keep_one_core_per_four_gb(
    client: Client, body: dict[str, int], expected: tuple[int, int]
) -> None:
    result = send(client, "PATCH", CDC, body, serviceId=ANALYTICS)
    assert (result["replicaCpuMillicores"], result["replicaMemoryGb"]) == expected
    assert send(client, "GET", CDC, serviceId=ANALYTICS) == result


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"replicaCpuMillicores": 1500}, "replicaCpuMillicores must be a multiple of 1000"),
        ({"replicaCpuMillicores": 64000}, "replicaCpuMillicores must be between 1000 and 32000"),
        ({"replicaMemoryGb": 6}, "replicaMemoryGb must be a multiple of 4"),
        ({"replicaCpuMillicores": 2000, "replicaMemoryGb": 16}, "replicaMemoryGb must be 4 GB"),
    ],
)
def test_cdc_scaling_should_refuse_values_off_the_grid(
    client: Client, body: dict[str, int], message: str
) -> None:
    assert message in refuse(client, "PATCH", CDC, body, serviceId=ANALYTICS)


# Reverse private endpoints.

CREATE_BODIES = {
    "VPC_ENDPOINT_SERVICE": {"vpcEndpointServiceName": "com.amazonaws.vpce.us-east-1.vpce-svc-1"},
    "VPC_RESOURCE": {
        "vpcResourceConfigurationId": "rcfg-0a1b2c3d",
        "vpcResourceShareArn": "arn:aws:ram:us-east-1:123456789012:resource-share/abc",
    },
    "MSK_MULTI_VPC": {
        "mskClusterArn": "arn:aws:kafka:us-east-1:123456789012:cluster/c/1",
        "mskAuthentication": "SASL_SCRAM",
    },
    "GCP_PSC_SERVICE_ATTACHMENT": {
        "gcpServiceAttachment": "projects/p/regions/europe-west4/serviceAttachments/kafka"
    },
}


@pytest.mark.parametrize("kind", list(CREATE_BODIES))
def test_a_created_endpoint_should_be_provisioning_then_ready_after_the_transition(
    client: Client, clock: Clock, kind: str
) -> None:
    body = {"description": "brokers", "type": kind, **CREATE_BODIES[kind]}
    created = send(client, "POST", ENDPOINTS, body, serviceId=STAGING)
    assert (created["status"], created["endpointId"], created["dnsNames"]) == (
        "Provisioning",
        "",
        [],
    )
    assert {k: created[k] for k in CREATE_BODIES[kind]} == CREATE_BODIES[kind]
    # The other types' connection fields are absent, not null.
    others = {"vpcEndpointServiceName", "mskClusterArn", "gcpServiceAttachment"} - set(body)
    assert None not in created.values() and not others & set(created)
    ids = {"serviceId": STAGING, "reversePrivateEndpointId": created["id"]}
    clock.advance(TRANSITION_MS - 1)
    assert send(client, "GET", ENDPOINT, **ids)["status"] == "Provisioning"
    clock.advance(1)
    ready = send(client, "GET", ENDPOINT, **ids)
    assert ready["status"] == "Ready" and ready["endpointId"] and ready["dnsNames"]
    assert send(client, "GET", ENDPOINTS, serviceId=STAGING) == [ready]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"type": "VPC_ENDPOINT_SERVICE"}, "vpcEndpointServiceName is required for type"),
        (
            {"type": "VPC_RESOURCE", "vpcResourceConfigurationId": "rcfg-1"},
            "vpcResourceShareArn is required for type VPC_RESOURCE",
        ),
        (
            {"type": "MSK_MULTI_VPC", "mskClusterArn": "arn:aws:kafka:x"},
            "mskAuthentication is required for type MSK_MULTI_VPC",
        ),
        ({"type": "GCP_PSC_SERVICE_ATTACHMENT"}, "gcpServiceAttachment is required for type"),
        (
            {
                "type": "GCP_PSC_SERVICE_ATTACHMENT",
                "gcpServiceAttachment": "a",
                "mskClusterArn": "b",
            },
            "mskClusterArn is not taken by type GCP_PSC_SERVICE_ATTACHMENT",
        ),
        ({"type": "PRIVATE_LINK"}, "type must be one of VPC_ENDPOINT_SERVICE"),
        ({"vpcEndpointServiceName": "x"}, "type is required"),
        (
            {"type": "MSK_MULTI_VPC", "mskClusterArn": "a", "mskAuthentication": "TLS"},
            "must be one",
        ),
    ],
)
def test_creating_an_endpoint_should_refuse_fields_its_type_does_not_fit(
    client: Client, body: dict[str, Any], message: str
) -> None:
    assert message in refuse(client, "POST", ENDPOINTS, body, serviceId=STAGING)


def test_an_endpoint_update_should_change_only_its_custom_private_dns_mappings(
    client: Client,
) -> None:
    ids = {"serviceId": ANALYTICS, "reversePrivateEndpointId": ENDPOINT_READY}
    mappings = [{"privateDnsName": "broker-1.internal.example.com"}]
    updated = send(client, "PATCH", ENDPOINT, {"customPrivateDnsMappings": mappings}, **ids)
    assert updated["customPrivateDnsMappings"] == mappings
    assert updated["privateDnsNames"] == ["broker-1.internal.example.com"]
    message = refuse(client, "PATCH", ENDPOINT, {"description": "renamed"}, **ids)
    assert message == (
        "BAD_REQUEST: description cannot be changed: only customPrivateDnsMappings can be updated"
    )


def test_an_endpoint_a_pipe_uses_should_not_be_deleted_until_no_pipe_does(
    client: Client,
) -> None:
    ids = {"serviceId": ANALYTICS, "reversePrivateEndpointId": ENDPOINT_READY}
    message = refuse(client, "DELETE", ENDPOINT, **ids)
    assert f"is used by pipe {KAFKA_PIPE} (orders)" in message
    unlink = {"source": {"kafka": {"reversePrivateEndpointIds": []}}}
    send(client, "PATCH", PIPE, unlink, serviceId=ANALYTICS, pipeId=KAFKA_PIPE)
    send(client, "DELETE", ENDPOINT, **ids)
    assert error(client.get(ENDPOINT.format(organizationId=ORG_ID, **ids)), 404)


# Schema discovery.

KAFKA = {
    "format": "JSONEachRow",
    "brokers": "broker-1.example.com:9092",
    "topics": "orders",
    "credentials": {"username": "u", "password": "p"},
}


def test_schema_discovery_should_infer_the_fields_of_the_topics_sample(client: Client) -> None:
    result = send(client, "POST", DISCOVERY, {"source": {"kafka": KAFKA}}, serviceId=ANALYTICS)
    fields = {f["name"]: (f["type"], f["optional"]) for f in result["fields"]}
    assert fields == {
        "id": ("String", False),
        "amount": ("Float64", False),
        "ts": ("DateTime64(3)", False),
        "updated": ("Int64", False),
        "coupon": ("String", True),
    }
    assert result["meta"] == {"format": "JSONEachRow", "sample": "orders", "messages": "3"}
    again = send(client, "POST", DISCOVERY, {"source": {"kafka": KAFKA}}, serviceId=ANALYTICS)
    assert again == result


def test_schema_discovery_should_read_a_kinesis_stream_or_the_default_sample(
    client: Client,
) -> None:
    kinesis = {
        "format": "JSONEachRow",
        "streamName": "clickstream",
        "region": "us-east-1",
        "iamRole": "arn:aws:iam::123456789012:role/r",
    }
    stream = send(client, "POST", DISCOVERY, {"source": {"kinesis": kinesis}}, serviceId=STAGING)
    assert ("referrer", "JSON", True) in [
        (f["name"], f["type"], f["optional"]) for f in stream["fields"]
    ]
    other = {"source": {"kafka": {**KAFKA, "topics": "unknown,orders"}}}
    default = send(client, "POST", DISCOVERY, other, serviceId=ANALYTICS)
    assert default["meta"]["sample"] == "default"
    assert [f["name"] for f in default["fields"]] == ["id", "name", "created_at", "active"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "source is required"),
        ({"source": {}}, "source must hold exactly one source kind: kafka, kinesis"),
        ({"source": {"objectStorage": {}}}, "source.objectStorage is not an allowed field"),
        (
            {"source": {"kafka": {k: v for k, v in KAFKA.items() if k != "credentials"}}},
            "source.kafka.credentials are required for authentication PLAIN",
        ),
        ({"source": {"kafka": {**KAFKA, "format": "CSV"}}}, "source.kafka.format must be one of"),
    ],
)
def test_schema_discovery_should_refuse_a_source_a_pipe_could_not_read(
    client: Client, body: dict[str, Any], message: str
) -> None:
    assert message in refuse(client, "POST", DISCOVERY, body, serviceId=ANALYTICS)


def test_a_pipes_path_should_not_be_taken_for_schema_discovery(client: Client) -> None:
    path = DISCOVERY.format(organizationId=ORG_ID, serviceId=ANALYTICS)
    assert client.get(path).status_code == 405
    assert ok(
        client.get(PIPE.format(organizationId=ORG_ID, serviceId=STAGING, pipeId=KINESIS_PIPE))
    )
