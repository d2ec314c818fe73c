"""The emulator's OpenAPI 3.1 description: valid, equal to what the emulator does, and fuzzed.

``/openapi.json`` is built from the routing table and the validation rules themselves; these
tests check that it is a valid OpenAPI 3.1 document, that every documented operation is
served (and nothing undocumented is), that ``--spec-only`` hides the extensions in both, that
documented request-body schemas accept and refuse what the emulator accepts and refuses, and
run schemathesis (stateless, positive and negative data, a bounded number of examples per
operation) against a real emulator on loopback: no server error, every response conforming.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from reconciler.emulator.openapi import document
from reconciler.emulator.seed import backup_id
from tests.support.emulator import Emulator, start_emulator, stop_emulator
from tests.support.seed_ids import SEED

EXAMPLES_PER_OPERATION = 20
# No server error and a conforming response (status, content type, headers, body schema).
# Not checked: whether negative data is refused — the emulator, like the service, ignores
# unknown query parameters, and every request here carries valid credentials.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[Emulator]:
    """An emulator of its own: fuzzing creates dashboards and renames the organization."""
    emulator = start_emulator()
    try:
        yield emulator
    finally:
        stop_emulator(emulator)


def auth(emulator: Emulator, path: str) -> dict[str, str]:
    """The Authorization header of the interface ``path`` belongs to."""
    if path.startswith("/api/v2"):
        return {"Authorization": f"Bearer {emulator.token}"}
    pair = base64.b64encode(f"{emulator.key_id}:{emulator.key_secret}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


def served(emulator: Emulator) -> dict[str, Any]:
    """The document the emulator serves."""
    response = httpx.get(f"{emulator.url}/openapi.json", timeout=10)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


def test_served_document_should_be_valid_openapi_3_1(fuzzed: Emulator) -> None:
    doc = served(fuzzed)
    assert doc["openapi"] == "3.1.0"
    validate(doc)
    assert doc == document()


def concrete(template: str) -> str:
    """A documented path with the seed's example ids filled in."""
    ids = {
        "organizationId": SEED.org_id,
        "serviceId": SEED.analytics,
        "pipeId": SEED.kafka_pipe,
        "endpointId": SEED.endpoint_ready,
        "backupId": backup_id(SEED.analytics, 2),
        "dashboardId": "no-such-dashboard",
    }
    for name, value in ids.items():
        template = template.replace("{" + name + "}", value)
    return template


def test_every_documented_operation_should_be_served_and_nothing_else(fuzzed: Emulator) -> None:
    with httpx.Client(base_url=fuzzed.url, timeout=10) as http:
        for template, methods in document()["paths"].items():
            fuzzed.reset()  # a DELETE on one path must not turn the next path's pipe into a 404
            path = concrete(template)
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                body = {} if method in ("POST", "PUT", "PATCH") else None
                response = http.request(method, path, json=body, headers=auth(fuzzed, path))
                if method.lower() in methods:
                    assert response.status_code != 405, (method, path)
                    if response.status_code == 404:  # a missing object, never a missing route
                        assert "dashboard" in path.lower() and method != "POST", (method, path)
                    else:
                        assert str(response.status_code) in methods[method.lower()]["responses"]
                else:
                    assert response.status_code == 405, (method, path, response.text)


def test_spec_only_should_hide_the_extensions_in_the_document_and_the_server() -> None:
    emulator = start_emulator("--spec-only")
    try:
        doc = served(emulator)
        assert doc == document(spec_only=True)
        full = document()
        hidden = [
            (template, method)
            for template, methods in full["paths"].items()
            for method in methods
            if template not in doc["paths"] or method not in doc["paths"][template]
        ]
        assert ("/api/v2/dashboards", "get") in hidden
        for template, method in hidden:
            path = concrete(template)
            response = httpx.request(
                method.upper(), emulator.url + path, headers=auth(emulator, path), timeout=10
            )
            assert response.status_code == 404, (method, path)
    finally:
        stop_emulator(emulator)


CREATE_BODY = {
    "name": "new",
    "source": {
        "kinesis": {
            "format": "JSONEachRow",
            "streamName": "s",
            "region": "us-east-1",
            "iamRole": "arn:aws:iam::123456789012:role/r",
        }
    },
    "destination": {"table": "t"},
}
# (operation id, body, accepted?): the documented schema and the emulator must agree.
BODIES: list[tuple[str, Any, bool]] = [
    ("patch_pipe", {"settings": {"engine_max_threads": 64}}, True),
    ("patch_pipe", {"settings": {"engine_max_threads": 65}}, False),
    ("patch_pipe", {"settings": {"engine_max_threads": 8.0}}, True),
    ("patch_pipe", {"settings": {"engine_max_threads": True}}, False),
    ("patch_pipe", {"settings": {"no_such_setting": 1}}, False),
    ("patch_pipe", {"name": ""}, False),
    ("patch_pipe", {"source": {"kafka": {"reversePrivateEndpointIds": ["nope"]}}}, False),
    ("patch_organization", {"name": "Acme"}, True),
    ("patch_organization", {"privateEndpoints": {"add": [{"description": "x"}]}}, False),
    ("create_dashboard", {"name": "d", "tiles": []}, True),
    ("create_dashboard", {"name": "d", "tiles": [{"name": "t", "x": 24}]}, False),
    ("create_dashboard", {"tiles": []}, False),
    ("create_pipe", CREATE_BODY, True),
    ("create_pipe", {k: v for k, v in CREATE_BODY.items() if k != "name"}, False),
    ("create_pipe", {**CREATE_BODY, "scaling": {"replicas": 41}}, False),
    ("command_pipe", {"command": "stop"}, True),
    ("command_pipe", {"command": "pause"}, False),
    ("scale_pipe", {"replicas": 40, "replicaMemoryGb": None}, True),
    ("scale_pipe", {"replicaCpuMillicores": 100}, False),
]


@pytest.mark.parametrize(("operation", "body", "accepted"), BODIES)
def test_documented_body_schema_should_accept_what_the_emulator_accepts(
    fuzzed: Emulator, operation: str, body: Any, accepted: bool
) -> None:
    fuzzed.reset()
    doc = document()
    [(template, method, spec)] = [
        (t, m, op)
        for t, methods in doc["paths"].items()
        for m, op in methods.items()
        if op["operationId"] == operation
    ]
    schema = spec["requestBody"]["content"]["application/json"]["schema"]
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    path = concrete(template)
    response = httpx.request(
        method.upper(), fuzzed.url + path, json=body, headers=auth(fuzzed, path), timeout=10
    )
    assert (valid, response.status_code == 200) == (accepted, accepted), response.text


OPERATIONS = [
    (method.upper(), template)
    for template, methods in document()["paths"].items()
    for method in methods
]
_LOADED: dict[str, Any] = {}


def loaded(emulator: Emulator) -> Any:
    """The served document as schemathesis reads it (loaded once per emulator)."""
    if emulator.url not in _LOADED:
        _LOADED[emulator.url] = schemathesis.openapi.from_url(f"{emulator.url}/openapi.json")
    return _LOADED[emulator.url]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize(("method", "template"), OPERATIONS)
def test_schemathesis_should_find_no_server_error_and_only_conforming_responses(
    fuzzed: Emulator, method: str, template: str, mode: GenerationMode
) -> None:
    fuzzed.reset()  # each operation is fuzzed from the seed, whatever ran before it
    operation = loaded(fuzzed)[template][method]
    strategy = operation.as_strategy(generation_mode=mode)
    ran: list[str] = []

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        ran.append(case.path)
        case.call_and_validate(headers=auth(fuzzed, case.path), checks=CHECKS, timeout=10)

    check()
    # Every operation gets examples of its own: none is skipped as ungeneratable.
    assert ran, f"schemathesis generated no example for {method} {template} ({mode.value})"
