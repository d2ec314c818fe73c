"""The contract oracle: it catches a bad request and a bad answer, and fails the run naming them.

Every test run records each exchange with an emulator and judges it against
``contract/management.openapi.json`` (``tests/contract/plugin.py``). These tests plant a
violation on each side — a request the contract refuses, sent with the client's identity, and
an answer the contract refuses, given by the emulator from a corrupted store — and check that
the oracle names the operation, the part, the JSON path and the rule; then that a test run
containing such an exchange fails, naming the test, in one process and under xdist. The
contract's own defects are repaired in one place: those repairs are pinned here too.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract.oracle import ALLOWED_FILE, Contract, read_allowed
from tests.contract.plugin import Planted
from tests.support.asgi import BASE, emulator_app, in_process
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID, POSTGRES_PAUSED_PIPE

ROOT = Path(__file__).resolve().parent.parent
PIPE = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
POSTGRES = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{POSTGRES_PAUSED_PIPE}"


def test_oracle_should_name_a_planted_bad_request_sent_as_the_client(planted: Planted) -> None:
    async def send() -> None:
        transport = httpx.ASGITransport(app=emulator_app())
        async with httpx.AsyncClient(
            transport=transport, base_url=BASE, auth=("demo-key-id", "demo-key-secret")
        ) as http:
            body = {"source": {"kafka": {"authentication": "PUBLIC"}}}
            await http.patch(PIPE, json=body, headers={"User-Agent": "reconcile"})

    asyncio.run(send())
    violations = planted.violations()

    assert [(v.operation.split()[0], v.part, v.path, v.rule.split()[0]) for v in violations] == [
        ("pipeUpdate", "request body", "$.source.kafka.authentication", "enum")
    ]
    assert "'PUBLIC' is not one of" in violations[0].message


def test_oracle_should_name_a_planted_bad_answer_of_the_emulator(planted: Planted) -> None:
    app = emulator_app()
    # Corrupt what the emulator holds: a port the contract bounds to 1..65535.
    app.runtime.store.data["pipes"][POSTGRES_PAUSED_PIPE]["source"]["postgres"]["port"] = 0

    async def read() -> None:
        async with in_process(app) as (client, _):
            await client.get(POSTGRES)

    asyncio.run(read())
    violations = [v for v in planted.violations() if v.path.endswith(".port")]

    assert [(v.operation.split()[0], v.part, v.path, v.rule) for v in violations] == [
        ("pipeGet", "response 200 body", "$.result.source.postgres.port", "minimum 1")
    ]


def test_oracle_should_leave_requests_of_others_than_the_client_to_the_emulator() -> None:
    # Tests send bad requests on purpose to see the emulator refuse them: only its answer counts.
    exchange = {
        "method": "PATCH",
        "path": PIPE,
        "agent": "python-httpx/0.27",
        "request": {"settings": {"streaming_max_insert_wait_ms": 1}},
        "status": 400,
        "response": {"status": 400, "requestId": _UUID, "error": "BAD_REQUEST: out of bounds"},
    }

    assert Contract.load().judge(exchange) == []
    assert Contract.load().judge({**exchange, "agent": "reconcile"})[0].path == (
        "$.settings.streaming_max_insert_wait_ms"
    )


_UUID = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c99"


@pytest.mark.parametrize(
    ("status", "response", "expected"),
    [
        (404, {"status": 404, "requestId": _UUID, "error": "NOT_FOUND: no pipe"}, []),
        (404, {"status": 404, "requestId": "nope", "error": "NOT_FOUND"}, ["$.requestId"]),
        (418, {"status": 418, "requestId": _UUID, "error": "TEAPOT"}, ["$"]),
    ],
)
def test_oracle_should_hold_statuses_outside_the_contract_to_the_error_body_or_refuse_them(
    status: int, response: dict[str, Any], expected: list[str]
) -> None:
    exchange = {"method": "GET", "path": PIPE, "agent": "reconcile", "status": status}

    violations = Contract.load().judge({**exchange, "response": response})

    assert [v.path for v in violations] == expected


@pytest.mark.parametrize(
    ("method", "path", "agent", "status", "expected"),
    [
        ("GET", f"/v1/organizations/{ORG_ID}/widgets", "reconcile", 404, ["operation"]),
        ("GET", f"/v1/organizations/{ORG_ID}/widgets", "python-httpx", 404, []),
        ("GET", f"/v1/organizations/{ORG_ID}/widgets", "python-httpx", 200, ["operation"]),
        ("PUT", PIPE, "reconcile", 405, ["operation"]),
    ],
)
def test_oracle_should_refuse_operations_the_contract_lacks(
    method: str, path: str, agent: str, status: int, expected: list[str]
) -> None:
    exchange = {"method": method, "path": path, "agent": agent, "status": status}

    violations = Contract.load().judge({**exchange, "response": None})

    assert [v.rule for v in violations] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", []),
        ("filter=tag%3AEnvironment%3DProduction", []),
        ("filter=tag%3AisActive&filter=tag%3AEnvironment%3DProduction", []),
        ("page=2", ["query parameter page"]),
    ],
)
def test_oracle_should_read_repeated_query_parameters_as_the_array_the_contract_types(
    query: str, expected: list[str]
) -> None:
    exchange = {
        "method": "GET",
        "path": f"/v1/organizations/{ORG_ID}/services",
        "agent": "reconcile",
        "query": query,
        "status": 200,
        "response": {"status": 200, "requestId": _UUID, "result": []},
    }

    assert [v.part for v in Contract.load().judge(exchange)] == expected


@pytest.mark.parametrize(
    ("kafka", "expected"),
    [
        ({"authentication": "PLAIN", "credentials": {"username": "u", "password": "p"}}, []),
        ({"authentication": "PLAIN", "credentials": {"connectionString": "Endpoint=sb://x"}}, []),
        ({"authentication": "IAM_USER", "credentials": {"accessKeyId": "a", "secretKey": "s"}}, []),
        (
            {"authentication": "IAM_USER", "credentials": {"username": "u", "password": "p"}},
            ["$.source.kafka.credentials"],
        ),
        (
            {"authentication": "MUTUAL_TLS", "credentials": {"username": "u", "password": "p"}},
            ["$.source.kafka.credentials"],
        ),
        (
            {"authentication": "IAM_ROLE", "credentials": {"username": "u", "password": "p"}},
            ["$.source.kafka.credentials"],
        ),
        ({"credentials": {"username": "u"}}, ["$.source.kafka.credentials"]),
    ],
)
def test_contract_repair_should_check_kafka_credentials_by_their_authentication(
    kafka: dict[str, Any], expected: list[str]
) -> None:
    exchange = {"method": "PATCH", "path": PIPE, "agent": "reconcile", "status": 400}
    body = {"source": {"kafka": kafka}}
    response = {"status": 400, "requestId": _UUID, "error": "BAD_REQUEST: x"}

    violations = Contract.load().judge({**exchange, "request": body, "response": response})

    assert sorted({v.path for v in violations}) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"source": {"objectStorage": {"authentication": None}}}, []),  # [string, null]
        ({"source": {"kinesis": {"authentication": None, "accessKey": None}}}, []),
        ({"settings": None}, []),  # oneOf [PipeSettings, null]: the object schema had no type
        ({"source": {"objectStorage": {"authentication": "PUBLIC"}}}, ["enum"]),
    ],
)
def test_contract_repair_should_allow_null_where_the_type_does(
    body: dict[str, Any], expected: list[str]
) -> None:
    exchange = {"method": "PATCH", "path": PIPE, "agent": "reconcile", "status": 400}
    response = {"status": 400, "requestId": _UUID, "error": "BAD_REQUEST: x"}

    violations = Contract.load().judge({**exchange, "request": body, "response": response})

    assert [v.rule.split()[0] for v in violations] == expected


def test_allow_list_should_give_a_reason_for_every_entry() -> None:
    entries = read_allowed(ALLOWED_FILE)

    assert entries
    assert all(len(e.reason.split()) >= 5 for e in entries)
    assert {e.kind for e in entries} == {"path", "status"}
    # A status the contract lists is never allow-listed (that would silence a violation).
    listed = {s for op in Contract.load().operations for s in op.spec["responses"]}
    assert not [e.pattern for e in entries if e.kind == "status" and e.pattern in listed]


_PLANTED = """
import asyncio

from tests.support.asgi import in_process
from tests.support.seed_ids import ANALYTICS, ORG_ID, POSTGRES_PAUSED_PIPE


async def read():
    async with in_process() as (client, app):
        pipe = app.runtime.store.data["pipes"][POSTGRES_PAUSED_PIPE]
        pipe["source"]["postgres"]["port"] = 70000
        path = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{POSTGRES_PAUSED_PIPE}"
        await client.get(path)


def test_reads_a_corrupted_pipe():
    asyncio.run(read())
"""


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "1", "--dist", "loadfile"]])
def test_a_run_with_a_violation_should_fail_naming_the_test_operation_path_and_rule(
    tmp_path: Path, workers: list[str]
) -> None:
    (tmp_path / "test_planted.py").write_text(textwrap.dedent(_PLANTED))

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path),
            "-p",
            "tests.contract.plugin",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            *workers,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )

    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "test_planted.py::test_reads_a_corrupted_pipe" in out
    assert (
        "pipeGet GET /v1/organizations/{organizationId}/services/{serviceId}/pipes/{pipeId}" in out
    )
    assert "$.result.source.postgres.port: maximum 65535" in out
    assert (
        "contract: 1 exchanges recorded, 1 judged (1 client requests), 0 allow-listed, 1 violations "
        in out
    )
