"""Hostile servers: every misbehaviour ends fast in a clean, typed error, and no credential leaks.

One small loopback server per misbehaviour (a redirect, HTML, truncated JSON, a huge body, a
trickled body, 429s with epoch / HTTP-date / negative / garbage wait headers), each run with
small configured limits (a 1 s deadline, a 3 s retry budget, a 64 KiB size cap). Each test
asserts the error's type and message, that it ended well inside a generous multiple of the
limits (never a wall-clock benchmark: a bound like 10x), and that a trap server standing for
"anywhere else" received nothing; the CLI test shows what a user sees from ``plan``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest

from reconciler.client.api import Client
from reconciler.client.limits import RequestLimits, parse_wait
from reconciler.client.ratelimit import Rate
from reconciler.model.apierrors import (
    ApiError,
    DeadlineExceeded,
    InterfaceDown,
    RedirectRefused,
    ResponseTooLarge,
)
from tests.support.cli import pipe_spec, run_cli, write_manifest
from tests.support.hostile_server import (
    LIMITS,
    SECRET,
    TOKEN,
    Behaviour,
    Handler,
    HostileServer,
    cli_env,
    client_config,
    envelope,
)

GENEROUS = 10 * LIMITS.retry_budget  # "ends well inside a generous multiple" of the limits


@pytest.fixture
def trap() -> Iterator[HostileServer]:
    """A server standing for "anywhere else": it must never receive a request."""
    server = HostileServer(lambda h: h.answer(200, b"{}", "application/json"))
    yield server
    server.stop()
    assert server.seen == [], "a request (with credentials) reached another host"


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], HostileServer]]:
    """Start hostile servers for one test; stop them after it."""
    started: list[HostileServer] = []

    def start(behaviour: Behaviour) -> HostileServer:
        server = HostileServer(behaviour)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def fetch(server: HostileServer, limits: RequestLimits = LIMITS, attempts: int = 6) -> Any:
    """GET one management path from ``server`` through the real client; return its result."""
    config = client_config(server, limits=limits, attempts=attempts)

    async def go() -> Any:
        async with Client(config) as client:
            return await client.get("/v1/organizations/x", resource="organization acme")

    return asyncio.run(go())


def timed_error(server: HostileServer, **kw: Any) -> tuple[ApiError, float]:
    """Return the error ``fetch`` raises and the seconds it took."""
    start = time.monotonic()
    with pytest.raises(ApiError) as caught:
        fetch(server, **kw)
    return caught.value, time.monotonic() - start


# -- redirects, HTML, truncated JSON, and the other clean-error cases ------------------------------


def test_redirect_should_be_refused_naming_where_it_pointed(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    server = serve(lambda h: h.answer(307, b"", "text/plain", Location=f"{trap.url}/steal?k=1"))
    error, _ = timed_error(server)
    assert isinstance(error, RedirectRefused)
    assert str(error) == (
        f"organization acme: HTTP 307: redirect to {trap.url}/steal refused: reconcile never "
        "follows redirects, so credentials go only to the configured URL (check it)"
    )
    assert len(server.seen) == 1  # not retried


def test_html_answer_should_be_a_clean_not_json_error(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    page = b"<!DOCTYPE html><html><body>Sign in</body></html>"
    error, _ = timed_error(serve(lambda h: h.answer(200, page, "text/html")))
    assert str(error) == "organization acme: HTTP 200: response is not JSON"


def test_truncated_json_should_be_a_clean_not_json_error(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    error, _ = timed_error(
        serve(lambda h: h.answer(200, envelope({"id": "x"})[:25], "application/json"))
    )
    assert str(error) == "organization acme: HTTP 200: response is not JSON"


def test_connection_cut_mid_body_should_name_the_server_and_what_was_tried(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    def cut(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b'{"status": 200, "res')
        h.close_connection = True

    server = serve(cut)
    error, elapsed = timed_error(server, attempts=3)
    assert "no response: RemoteProtocolError" in str(error)
    assert "gave up after 3 attempts" in str(error)
    assert len(server.seen) == 3
    assert elapsed < GENEROUS


# -- a huge body -----------------------------------------------------------------------------------


def endless_body(h: Handler) -> None:
    """An endless chunked JSON-looking body."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b" " * 65536
    while not h.server.stopping.is_set():
        h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))


def test_endless_body_should_stop_at_the_size_cap(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    server = serve(endless_body)
    error, elapsed = timed_error(server)
    assert isinstance(error, ResponseTooLarge)
    assert str(error).startswith(
        "organization acme: HTTP 200: response body larger than the limit of 64 KiB"
        " (stopped reading at"
    )
    assert "--max-response-size / RECONCILE_MAX_RESPONSE_SIZE" in str(error)
    assert len(server.seen) == 1  # a size refusal is not retried
    assert elapsed < GENEROUS


def test_declared_huge_body_should_be_refused_before_reading(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    def declared(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(4 * 1024**3))
        h.end_headers()
        h.wfile.write(b"{")

    error, _ = timed_error(serve(declared))
    assert isinstance(error, ResponseTooLarge)
    assert "(Content-Length says 4 GiB)" in str(error)


# -- a trickled body -------------------------------------------------------------------------------


def trickle(h: Handler) -> None:
    """Headers at once, then one byte of body every 0.1 s for ever."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", "50000")
    h.end_headers()
    while not h.server.stopping.wait(0.1):
        h.wfile.write(b" ")
        h.wfile.flush()


def test_trickled_body_should_end_at_the_request_deadline(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    server = serve(trickle)
    error, elapsed = timed_error(server, attempts=2)
    assert isinstance(error, DeadlineExceeded)
    assert str(error).startswith(
        "organization acme: HTTP 200: no complete answer within 1 s (the request deadline:"
        " --request-deadline / RECONCILE_REQUEST_DEADLINE); gave up after 2 attempts in"
    )
    assert len(server.seen) == 2
    assert elapsed < 10 * LIMITS.deadline * 2


def test_trickle_should_be_cut_by_the_retry_budget_too(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    limits = RequestLimits(max_wait=1.0, retry_budget=1.5, deadline=1.0)
    with pytest.raises(InterfaceDown) as caught:  # no success at all: the run's budget too
        fetch(serve(trickle), limits=limits, attempts=100)
    text = str(caught.value)
    assert "the run's retry budget of 1.5 s (--retry-budget / RECONCILE_RETRY_BUDGET)" in text
    assert "its last answer: HTTP 200, then no complete answer within" in text


# -- 429 wait headers ------------------------------------------------------------------------------


def throttle_once(headers: Callable[[], dict[str, str]]) -> Behaviour:
    """Answer the first request 429 with ``headers()``, then succeed."""

    def behave(h: Handler) -> None:
        if len(h.server.seen) == 1:
            body = json.dumps({"status": 429, "error": "Rate limit exceeded"}).encode()
            h.answer(429, body, "application/json", **headers())
        else:
            h.answer(200, envelope({"id": "org"}), "application/json")

    return behave


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param(lambda: {"X-RateLimit-Reset": f"{time.time() + 0.5:.3f}"}, 0.5, id="epoch"),
        pytest.param(
            lambda: {"Retry-After": formatdate(time.time() + 2, usegmt=True)}, 1.0, id="http-date"
        ),
        pytest.param(lambda: {"X-RateLimit-Reset": "0.3"}, 0.3, id="delta"),
    ],
)
def test_429_wait_should_be_read_in_every_form_and_capped(
    serve: Callable[[Behaviour], HostileServer],
    trap: HostileServer,
    headers: Callable[[], dict[str, str]],
    expected: float,
) -> None:
    server = serve(throttle_once(headers))
    start = time.monotonic()
    assert fetch(server) == {"id": "org"}
    elapsed = time.monotonic() - start
    assert len(server.seen) == 2
    # It waited about what was asked (the HTTP date, 2 s away, is capped at max_wait 1 s).
    assert expected * 0.5 <= elapsed < expected + 5


def test_epoch_reset_far_away_should_be_capped_and_then_give_up_within_the_budget(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    reset = {"X-RateLimit-Reset": str(int(time.time()) + 3600)}
    server = serve(lambda h: h.answer(429, b"{}", "application/json", **reset))
    start = time.monotonic()
    with pytest.raises(InterfaceDown) as caught:
        fetch(server)
    text = str(caught.value)
    assert re.search(
        r"its last answer: HTTP 429: Too Many Requests \[X-RateLimit-Reset asked 3\d\d\d s, "
        r"capped at 1 s: --max-wait / RECONCILE_MAX_WAIT\]",
        text,
    )
    assert "the run's retry budget of 3 s" in text
    assert time.monotonic() - start < GENEROUS


def test_negative_retry_after_and_garbage_reset_should_be_ignored_and_bounded(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    bad = {"Retry-After": "-5", "X-RateLimit-Reset": "soon"}
    server = serve(lambda h: h.answer(429, b"{}", "application/json", **bad))
    error, elapsed = timed_error(server, attempts=2)
    assert str(error).startswith(
        "organization acme: HTTP 429: Too Many Requests; gave up after 2 attempts in"
    )
    assert "tried: HTTP 429 (no usable wait header; backing off 1 s), HTTP 429 (no usable" in str(
        error
    )
    assert len(server.seen) == 2
    assert elapsed < GENEROUS


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5", 5.0),
        ("0.25", 0.25),
        ("1000000060", 60.0),
        ("Thu, 01 Jan 1970 00:16:40 GMT", 0.0),
        ("Sun, 09 Sep 2001 01:47:40 GMT", 60.0),
        ("-5", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
        ("", None),
        (None, None),
        ("Sun, 09 Sep 2001 01:47:40", None),  # no zone: ambiguous
    ],
)
def test_parse_wait_should_read_delta_epoch_and_date_and_ignore_the_rest(
    value: str | None, seconds: float | None
) -> None:
    assert parse_wait(value, now=1_000_000_000.0) == seconds


# -- what a user sees ------------------------------------------------------------------------------


def test_plan_against_a_trickling_server_should_end_with_a_clean_error(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer, tmp_path: Path
) -> None:
    server = serve(trickle)
    manifest = tmp_path / "org.yaml"
    manifest.write_text(
        "apiVersion: reconcile/v1\nkind: Organization\nmetadata: {name: acme}\n"
        "spec: {organizationId: 7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c, name: Acme}\n",
        encoding="utf-8",
    )
    env = cli_env(server)
    start = time.monotonic()
    result = run_cli(["plan", str(manifest), "--state", str(tmp_path / "s.json")], env)
    assert time.monotonic() - start < 20
    assert result.exit_code == 1
    assert "no complete answer within" in result.output and "stopped answering" in result.output
    assert "Traceback" not in result.output
    assert SECRET not in result.output and TOKEN not in result.output


# -- the run-level retry budget --------------------------------------------------------------------


def _always_429(reset: Callable[[], dict[str, str]]) -> Behaviour:
    def behave(h: Handler) -> None:
        body = json.dumps({"status": 429, "error": "Rate limit exceeded"}).encode()
        h.answer(429, body, "application/json", **reset())

    return behave


NEVER_SUCCEEDS = {
    "429-reset": (
        _always_429(lambda: {"X-RateLimit-Reset": f"{time.time() + 3:.0f}"}),
        "its last answer: HTTP 429: Rate limit exceeded",
    ),
    "429-garbage": (
        _always_429(lambda: {"Retry-After": "-5", "X-RateLimit-Reset": "soon"}),
        "its last answer: HTTP 429: Rate limit exceeded [no usable wait header",
    ),
    "trickle": (trickle, "its last answer: HTTP 200, then no complete answer within"),
}


def test_many_requests_to_a_server_that_never_succeeds_end_within_the_run_budget(
    serve: Callable[[Behaviour], HostileServer], trap: HostileServer
) -> None:
    # Thirty reads that each respect their own budget used to add up; the run's budget ends
    # them all, and those that come after it fail at once without reaching the server.
    server = serve(_always_429(lambda: {"X-RateLimit-Reset": "0.4"}))
    limits = RequestLimits(max_wait=1.0, retry_budget=2.0, deadline=1.0)
    config = client_config(server, limits=limits, attempts=100, rate=Rate(2, 1.0))

    async def go() -> tuple[list[BaseException], int]:
        async with Client(config) as client:
            outcomes = await asyncio.gather(
                *(client.get(f"/v1/organizations/o{i}") for i in range(30)),
                return_exceptions=True,
            )
            seen = len(server.seen)
            with pytest.raises(InterfaceDown):
                await client.get("/v1/organizations/late")
            assert len(server.seen) == seen  # nothing more reached the server
            return [o for o in outcomes if isinstance(o, BaseException)], seen

    start = time.monotonic()
    errors, _ = asyncio.run(go())
    elapsed = time.monotonic() - start
    assert len(errors) == 30 and all(isinstance(e, InterfaceDown) for e in errors)
    message = str(errors[0])
    assert message.startswith(f"the management API at {server.url} stopped answering: ")
    assert "without a single success" in message and "the run's retry budget of 2 s" in message
    assert "(--retry-budget / RECONCILE_RETRY_BUDGET)" in message
    assert "its last answer: HTTP 429: Rate limit exceeded [X-RateLimit-Reset 0.4 s]" in message
    assert elapsed < GENEROUS


@pytest.mark.parametrize("misbehaviour", sorted(NEVER_SUCCEEDS))
def test_plan_against_a_server_that_never_succeeds_ends_with_one_message_naming_its_answer(
    serve: Callable[[Behaviour], HostileServer],
    trap: HostileServer,
    tmp_path: Path,
    misbehaviour: str,
) -> None:
    behaviour, expected = NEVER_SUCCEEDS[misbehaviour]
    server = serve(behaviour)
    for index in range(12):
        pipe = f"0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c{index:02d}"
        spec = pipe_spec(pipe, settings={"engine_max_threads": 4})
        write_manifest(tmp_path / "m" / f"p{index}.yaml", "Pipe", f"p{index}", spec)
    env = {**cli_env(server), "RECONCILE_MAX_WAIT": "1"}
    start = time.monotonic()
    result = run_cli(["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s.json")], env)
    elapsed = time.monotonic() - start
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr  # one message for the run, not one per pipe
    assert "management API" in errors[0] and "stopped answering" in errors[0]
    assert expected in errors[0]
    assert "Nothing more is sent to it in this run" in errors[0]
    assert SECRET not in result.output and TOKEN not in result.output
    assert elapsed < 10 * (2 + 1)  # budget + one deadline, with a generous multiple
