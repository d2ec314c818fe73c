"""``Health`` (the run's state of both interfaces) on a fake clock: first contact, refused
credentials, when an interface is given up, what its error says, and that its URL is named
without credentials."""

from __future__ import annotations

import httpx
import pytest

from reconciler.client.health import REFUSED_GRACE, Health
from reconciler.model.apierrors import (
    ApiError,
    AuthenticationFailed,
    InterfaceDown,
    ServiceUnreachable,
)

M, D = "management", "dashboards"
ORG = "11111111-2222-4333-8444-555555555555"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def health(clock: Clock, budget: float = 120.0, url: str = "https://api.example.com/") -> Health:
    urls = {M: (url, "RECONCILE_BASE_URL"), D: (url, "RECONCILE_DASHBOARDS_URL")}
    return Health(urls, budget, clock=clock)


def served(h: Health, interface: str = M) -> None:
    h.answered(interface, 200, None, "/v1/organizations")
    h.success(interface)


def test_a_healthy_interface_is_never_given_up() -> None:
    clock = Clock()
    h = health(clock)
    served(h)
    clock.now += 10_000
    assert h.give_up_at(M) == float("inf")
    assert not h.exhausted(M, 60.0)
    h.check(M)


def test_the_budget_runs_from_the_first_failed_attempt_and_a_success_resets_it() -> None:
    clock = Clock()
    h = health(clock, budget=10.0)
    h.failure(M, started=clock.now - 2.0, answer="HTTP 429: slow down")
    assert h.give_up_at(M) == pytest.approx(clock.now + 8.0)
    clock.now += 5.0
    served(h)
    assert h.give_up_at(M) == float("inf")


def test_a_wait_that_would_pass_the_budget_gives_the_interface_up_at_once() -> None:
    clock = Clock()
    h = health(clock, budget=10.0)
    h.failure(M, started=clock.now, answer="HTTP 429: Rate limit exceeded [Retry-After 3 s]")
    clock.now += 8.0
    assert not h.exhausted(M, 1.0)
    assert h.exhausted(M, 3.0)
    with pytest.raises(InterfaceDown) as caught:
        h.check(M)
    assert str(caught.value) == (
        "the management API at https://api.example.com stopped answering: 8.0 s of waits and "
        "retries without a single success, and 3 s more would pass: the run's retry budget of "
        "10 s (--retry-budget / RECONCILE_RETRY_BUDGET); its last answer: HTTP 429: Rate limit "
        "exceeded [Retry-After 3 s]. Nothing more is sent to it in this run"
    )
    h.check(D)  # the other interface carries on
    assert h.stopped() == (caught.value,)
    assert h.give_up_at(M) == float("-inf")  # nothing waits for a place any more


@pytest.mark.parametrize(
    ("answered", "given_up_after"),
    [(True, REFUSED_GRACE), (False, 120.0)],
    ids=["after-a-success", "before-any-answer"],
)
def test_refused_connections_count_only_after_the_interface_had_answered(
    answered: bool, given_up_after: float
) -> None:
    clock = Clock()
    h = health(clock)
    if answered:
        served(h)
    h.failure(M, started=clock.now, answer="ConnectError: refused", refused=True)
    assert h.give_up_at(M) == pytest.approx(clock.now + given_up_after)


def test_a_refusal_streak_ends_with_any_other_failure() -> None:
    clock = Clock()
    h = health(clock)
    served(h)
    h.failure(M, started=clock.now, answer="ConnectError: refused", refused=True)
    h.failure(M, started=clock.now, answer="HTTP 503: restarting")
    assert h.give_up_at(M) == pytest.approx(clock.now + 120.0)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("https://user:secret@api.example.com:8443/v/?token=abc", "https://api.example.com:8443/v"),
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("http://[::1]:9/", "http://[::1]:9"),
    ],
)
def test_the_url_is_named_without_credentials_or_query(url: str, named: str) -> None:
    h = health(Clock(), budget=1.0, url=url)
    h.failure(D, started=0.0, answer="HTTP 503")
    assert f"at {named} stopped answering" in str(h.give_up(D))


def refusal(message: str) -> ApiError:
    return ApiError(status=403, message=message, request_id="req-7")


@pytest.mark.parametrize(
    ("earlier", "status", "message", "path", "fatal"),
    [
        (None, 401, "bad key", "/v1/organizations", True),
        (None, 403, "forbidden", "/v1/organizations", True),
        (200, 403, "forbidden", "/v1/organizations", False),
        (200, 401, "bad key", "/v1/organizations", True),
        (
            None,
            403,
            f"Key is not allowed to access organization {ORG}",
            f"/v1/organizations/{ORG}",
            False,
        ),
    ],
    ids=["401-first", "403-first", "403-after-success", "401-after-success", "403-naming-the-org"],
)
def test_refused_credentials_end_the_run_but_a_refused_organization_does_not(
    earlier: int | None, status: int, message: str, path: str, fatal: bool
) -> None:
    h = health(Clock())
    if earlier is not None:
        h.answered(M, earlier, None, "/v1/organizations")
    if fatal:
        with pytest.raises(AuthenticationFailed) as caught:
            h.answered(M, status, refusal(message), path)
        with pytest.raises(AuthenticationFailed):
            h.check(D)  # every later request of the run, either interface
        assert "RECONCILE_KEY_ID and RECONCILE_KEY_SECRET" in str(caught.value)
    else:
        h.answered(M, status, refusal(message), path)
        h.check(M)
    assert h.refused_organizations == ({ORG} if ORG in message else set())


@pytest.mark.parametrize(
    ("answered_before", "error", "fatal"),
    [
        (False, httpx.ConnectError("connection refused"), True),
        (False, httpx.ConnectTimeout("timed out"), True),
        (False, httpx.ReadError("reset"), False),
        (True, httpx.ConnectError("connection refused"), False),
    ],
    ids=["refused-first", "timeout-first", "read-error-first", "refused-after-an-answer"],
)
def test_a_connection_error_before_any_answer_is_unreachable_and_not_retried(
    answered_before: bool, error: Exception, fatal: bool
) -> None:
    h = health(Clock())
    if answered_before:
        h.answered(M, 503, None, "/v1/organizations")
    if fatal:
        with pytest.raises(ServiceUnreachable) as caught:
            h.unreachable(M, error)
        assert "Check RECONCILE_BASE_URL" in str(caught.value)
        with pytest.raises(ServiceUnreachable):
            h.check(M)
    else:
        h.unreachable(M, error)
        h.check(M)
