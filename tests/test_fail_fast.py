"""Fail fast on the obvious: unreachable server, TLS mismatch and refused credentials stop the run."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.client.api import Client
from reconciler.model.apierrors import ApiError, AuthenticationFailed, ServiceUnreachable
from reconciler.model.errors import ReconcileError
from tests.support.asgi import config, emulator_app, in_process
from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def plan(env: dict[str, str], tmp_path: Path) -> tuple[Any, float]:
    started = time.monotonic()
    result = run_cli(["plan", str(EXAMPLES), "--state", str(tmp_path / "s.json")], env)
    return result, time.monotonic() - started


def test_connection_refused_on_the_first_request_is_one_error_not_retried(
    emulator: Emulator, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result, elapsed = plan({**emulator.env(), "RECONCILE_BASE_URL": url}, tmp_path)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: cannot reach the management API at {url}: connection refused (nothing listens "
        "on that port). Check RECONCILE_BASE_URL; not retried, because no request has reached "
        "the server yet\n"
    )
    assert elapsed < 3.0  # the bound; without fail-fast this took 27 s of retries


def test_https_to_a_plain_http_server_is_a_tls_error_not_retried(
    emulator: Emulator, tmp_path: Path
) -> None:
    url = emulator.url.replace("http://", "https://")
    result, _ = plan({**emulator.env(), "RECONCILE_BASE_URL": url}, tmp_path)
    assert result.exit_code == 1
    assert "TLS handshake failed" in result.stderr and "RECONCILE_BASE_URL" in result.stderr
    assert result.stderr.count("Error:") == 1


@pytest.mark.parametrize(
    ("variable", "named"),
    [
        ("RECONCILE_KEY_SECRET", "RECONCILE_KEY_ID and RECONCILE_KEY_SECRET"),
        ("RECONCILE_DASHBOARDS_TOKEN", "RECONCILE_DASHBOARDS_TOKEN"),
    ],
)
def test_refused_credentials_stop_the_run_with_one_message_naming_the_variable(
    emulator: Emulator, tmp_path: Path, variable: str, named: str
) -> None:
    result, _ = plan({**emulator.env(), variable: "wrong"}, tmp_path)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("Error:") == 1
    assert "refused the credentials (HTTP 401" in result.stderr
    assert f"Check {named}" in result.stderr
    refused = [r for r in emulator.requests() if r["status"] == 401]
    assert 1 <= len(refused) <= 8  # at most the first wave of parallel reads, not one per resource


class FlakyAfterFirst(httpx.AsyncBaseTransport):
    """Answers from the emulator app, but fails the connection on chosen calls."""

    def __init__(
        self, fail_on: set[int], error: type[httpx.TransportError] = httpx.ConnectError
    ) -> None:
        self.inner = httpx.ASGITransport(app=emulator_app())
        self.fail_on = fail_on
        self.error = error
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls in self.fail_on:
            raise self.error("connection failed", request=request)
        return await self.inner.handle_async_request(request)


def test_a_connection_error_after_the_server_answered_is_still_retried() -> None:
    async def go() -> Any:
        transport = FlakyAfterFirst(fail_on={2})
        async with Client(config(), transport=transport) as client:
            await client.get(f"/v1/organizations/{ORG}")
            await client.get(f"/v1/organizations/{ORG}")
            return client.stats, transport.calls

    stats, calls = asyncio.run(go())
    # Three attempts, of which the refused connection sent nothing: two requests sent.
    assert calls == 3 and stats.requests["management"] == 2


@pytest.mark.parametrize("error", [httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout])
def test_an_attempt_that_never_connected_is_not_counted_as_a_request_sent(
    error: type[httpx.TransportError],
) -> None:
    async def go() -> Any:
        transport = FlakyAfterFirst(fail_on={1}, error=error)
        async with Client(config(), transport=transport) as client:
            with contextlib.suppress(ReconcileError):  # first contact failed: not retried
                await client.get(f"/v1/organizations/{ORG}")
            return client.stats, transport.calls

    stats, calls = asyncio.run(go())
    # A pool timeout is retried (the retry connects); a first refused connection is not.
    assert calls == (2 if error is httpx.PoolTimeout else 1)
    assert stats.requests == {"management": calls - 1, "dashboards": 0}


@pytest.mark.parametrize("error", [httpx.ConnectError, httpx.ConnectTimeout])
def test_first_contact_failure_fails_every_later_request_without_sending_it(
    error: type[httpx.TransportError],
) -> None:
    async def go() -> Any:
        transport = FlakyAfterFirst(fail_on={1}, error=error)
        async with Client(config(), transport=transport) as client:
            with pytest.raises(ServiceUnreachable):
                await client.get(f"/v1/organizations/{ORG}")
            with pytest.raises(ServiceUnreachable):
                await client.get(f"/v1/organizations/{ORG}")
            return transport.calls

    assert asyncio.run(go()) == 1


def test_a_403_after_a_success_is_an_error_of_that_request_only() -> None:
    other_org = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"

    async def go() -> Any:
        transport = FlakyAfterFirst(fail_on=set())
        async with Client(config(), transport=transport) as client:
            await client.get(f"/v1/organizations/{ORG}")
            with pytest.raises(ApiError) as caught:
                await client.get(f"/v1/organizations/{other_org}")
            assert not isinstance(caught.value, AuthenticationFailed)
            return caught.value.status

    assert asyncio.run(go()) in (403, 404)


def test_a_first_403_naming_the_requested_organization_refuses_that_organization_only() -> None:
    other_org = "11111111-2222-4333-8444-555555555555"

    async def go() -> Any:
        async with in_process() as (client, _app):
            with pytest.raises(ApiError) as caught:
                await client.get(f"/v1/organizations/{other_org}")
            assert not isinstance(caught.value, AuthenticationFailed)
            assert caught.value.status == 403
            await client.get(f"/v1/organizations/{ORG}")  # the run goes on
            return client.health.refused_organizations

    assert asyncio.run(go()) == {"11111111-2222-4333-8444-555555555555"}


def test_credentials_revoked_after_a_saved_plan_stop_its_apply_with_the_one_message(
    emulator: Emulator, tmp_path: Path
) -> None:
    state, saved = str(tmp_path / "s.json"), str(tmp_path / "plan.json")
    made = run_cli(["plan", str(EXAMPLES), "--state", state, "--out", saved], emulator.env())
    assert made.exit_code == 0, made.output
    env = {**emulator.env(), "RECONCILE_KEY_SECRET": "revoked"}
    result = run_cli(["apply", "--plan", saved, "--state", state, "--auto-approve"], env)
    assert result.exit_code == 1
    assert result.stderr.count("Error:") == 1
    assert result.stderr.startswith("Error: the management API refused the credentials (HTTP 401")
    assert "stale plan" not in result.output and "cannot re-read" not in result.output
    assert not [r for r in emulator.requests() if r["method"] in ("POST", "PATCH", "DELETE")]


def _catches_api_errors(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught] if caught else []
    catches = any(isinstance(n, ast.Name) and n.id in ("ApiError", "AuthError") for n in names)
    passes_on = len(handler.body) == 1 and isinstance(handler.body[0], ast.Raise)
    return catches and not passes_on


def test_every_handler_that_carries_on_after_an_api_error_lets_refused_credentials_through() -> (
    None
):
    # AuthenticationFailed is an AuthError (an ApiError): a handler that records one resource's
    # error and carries on would swallow it, unless an earlier clause of its try re-raises it.
    swallowing = []
    for source in sorted((REPO / "reconciler").rglob("*.py")):
        if "emulator" in source.parts:
            continue
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if not isinstance(node, ast.Try):
                continue
            seen_guard = False
            for handler in node.handlers:
                if isinstance(handler.type, ast.Name) and handler.type.id == "AuthenticationFailed":
                    seen_guard = isinstance(handler.body[-1], ast.Raise)
                elif _catches_api_errors(handler) and not seen_guard:
                    swallowing.append(f"{source.relative_to(REPO)}:{handler.lineno}")
    assert swallowing == []
