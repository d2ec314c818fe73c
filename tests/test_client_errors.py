"""Typed API errors: each HTTP status becomes its own ``ApiError`` branch, optional endpoints a
server lacks become ``Unsupported``, and every caller can tell them apart without a status code
(the client against the in-process emulator through ``httpx.ASGITransport``)."""

from __future__ import annotations

import asyncio

import pytest

from reconciler.client.paths import organization_path, pipe_path, pipes_path
from reconciler.model.apierrors import (
    ApiError,
    AuthenticationFailed,
    AuthError,
    BadRequest,
    Conflict,
    FailedDependency,
    MethodNotAllowed,
    NotFound,
    RateLimited,
    ServerError,
    Unsupported,
    api_error_type,
)
from reconciler.model.errors import ReconcileError
from tests.contract.plugin import Planted
from tests.support.asgi import emulator_app, in_process
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

MISSING_PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-000000000000"


@pytest.mark.parametrize(
    ("status", "branch"),
    [
        (400, BadRequest),
        (401, AuthError),
        (403, AuthError),
        (404, NotFound),
        (405, MethodNotAllowed),
        (409, Conflict),
        (424, FailedDependency),
        (429, RateLimited),
        (500, ServerError),
        (503, ServerError),
        (418, ApiError),
        (None, ApiError),
    ],
)
def test_each_status_maps_to_one_branch_of_the_root_exception(
    status: int | None, branch: type[ApiError]
) -> None:
    assert api_error_type(status) is branch
    assert issubclass(branch, ReconcileError)


def test_naming_the_resource_keeps_the_branch_and_the_message_fields() -> None:
    error = NotFound(
        status=404, message="NOT_FOUND: no pipe", request_id="r-1", method="GET", path="/p"
    )
    named = error.with_resource("pipe orders")
    assert type(named) is NotFound
    assert str(named) == "pipe orders: HTTP 404: NOT_FOUND: no pipe (requestId r-1)"


def test_a_missing_pipe_is_not_found_and_names_status_and_request_id() -> None:
    async def go() -> NotFound:
        async with in_process() as (client, _):
            with pytest.raises(NotFound) as caught:
                await client.get(pipe_path(ORG_ID, ANALYTICS, MISSING_PIPE), resource="pipe x")
            return caught.value

    error = asyncio.run(go())
    assert (error.status, error.resource) == (404, "pipe x")
    assert error.request_id


def test_wrong_credentials_are_an_authentication_failure_on_the_one_auth_branch() -> None:
    # A branch of AuthError (so `except AuthError` in a caller's code sees it), which the
    # per-resource handlers of plan and apply let through (tests/test_fail_fast.py).
    async def go() -> None:
        async with in_process(key_secret="wrong") as (client, _):
            await client.get(organization_path(ORG_ID), resource="organization main")

    with pytest.raises(AuthError) as caught:
        asyncio.run(go())
    error = caught.value
    assert type(error) is AuthenticationFailed  # the type survives Client._call's with_resource
    assert isinstance(error, ApiError) and isinstance(error, ReconcileError)
    assert (error.status, error.resource) == (401, None)  # the whole run, not one resource
    assert error.request_id and error.detail == error.message
    assert str(error) == (
        f"the management API refused the credentials (HTTP 401, requestId {error.request_id}: "
        f"{error.detail}). Check RECONCILE_KEY_ID and RECONCILE_KEY_SECRET (or "
        "--key-id/--key-secret); the run stopped at the first refusal"
    )


def test_naming_a_resource_or_a_branch_leaves_an_authentication_failure_as_it_is() -> None:
    error = AuthenticationFailed(
        interface="dashboards", status=401, detail="bad token", request_id="r-9", variables="T"
    )
    for copy in (error.with_resource("dashboard sales"), error.as_type(NotFound)):
        assert copy is error
    assert error.to_dict() == {
        "type": "AuthenticationFailed",
        "status": 401,
        "requestId": "r-9",
        "code": None,
        "message": "bad token",
        "resource": None,
        "interface": "dashboards",
    }


def test_an_invalid_body_is_a_bad_request(planted: Planted) -> None:
    async def go() -> None:
        async with in_process() as (client, _):
            await client.call(
                "management",
                "PATCH",
                pipe_path(ORG_ID, ANALYTICS, KAFKA_PIPE),
                {"settings": {"streaming_max_insert_wait_ms": 1}},
                idempotent=True,
            )

    with pytest.raises(BadRequest):
        asyncio.run(go())
    # The body breaks the contract on purpose: the oracle names it (and nothing else).
    assert [(v.path, v.rule) for v in planted.violations()] == [
        ("$.settings.streaming_max_insert_wait_ms", "minimum 500")
    ]


def test_an_optional_endpoint_the_server_lacks_is_unsupported_and_a_required_one_not_found() -> (
    None
):
    app = emulator_app(spec_only=True)

    async def go() -> tuple[ApiError, ApiError]:
        async with in_process(app) as (client, _):
            with pytest.raises(Unsupported) as optional:
                await client.get(pipes_path(ORG_ID, ANALYTICS), optional=True)
            with pytest.raises(NotFound) as required:
                await client.get(pipes_path(ORG_ID, ANALYTICS))
            with pytest.raises(Unsupported):
                await client.dashboards("GET", "/api/v2/dashboards", optional=True)
            return optional.value, required.value

    optional, required = asyncio.run(go())
    assert not isinstance(required, Unsupported)
    assert optional.status in (404, 405)


def test_a_spent_budget_is_rate_limited_once_retries_are_exhausted() -> None:
    app = emulator_app(rate_limit=(1, 60.0))

    async def go() -> None:
        async with in_process(app, max_attempts=1) as (client, _):
            await client.get(organization_path(ORG_ID))
            await client.get(organization_path(ORG_ID))

    with pytest.raises(RateLimited):
        asyncio.run(go())
