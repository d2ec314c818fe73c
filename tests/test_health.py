"""``InterfaceHealth`` (the run-level bounds per interface) on a fake clock: when an interface is
given up, what its error says, and that its URL is named without credentials."""

from __future__ import annotations

import pytest

from reconciler.client.health import REFUSED_GRACE, InterfaceHealth
from reconciler.model.errors import InterfaceDown


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def health(clock: Clock, budget: float = 120.0) -> InterfaceHealth:
    return InterfaceHealth("management", "https://api.example.com/", budget, clock=clock)


def test_a_healthy_interface_is_never_given_up() -> None:
    clock = Clock()
    h = health(clock)
    h.success()
    clock.now += 10_000
    assert h.give_up_at() == float("inf")
    assert not h.exhausted(60.0)
    h.check()


def test_the_budget_runs_from_the_first_failed_attempt_and_a_success_resets_it() -> None:
    clock = Clock()
    h = health(clock, budget=10.0)
    h.failure(started=clock.now - 2.0, answer="HTTP 429: slow down")
    assert h.give_up_at() == pytest.approx(clock.now + 8.0)
    clock.now += 5.0
    h.success()
    assert h.give_up_at() == float("inf")


def test_a_wait_that_would_pass_the_budget_gives_the_interface_up_at_once() -> None:
    clock = Clock()
    h = health(clock, budget=10.0)
    h.failure(started=clock.now, answer="HTTP 429: Rate limit exceeded [Retry-After 3 s]")
    clock.now += 8.0
    assert not h.exhausted(1.0)
    assert h.exhausted(3.0)
    with pytest.raises(InterfaceDown) as caught:
        h.check()
    assert str(caught.value) == (
        "the management API at https://api.example.com stopped answering: 8.0 s of waits and "
        "retries without a single success, and 3 s more would pass: the run's retry budget of "
        "10 s (--retry-budget / RECONCILE_RETRY_BUDGET); its last answer: HTTP 429: Rate limit "
        "exceeded [Retry-After 3 s]. Nothing more is sent to it in this run"
    )


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
        h.success()
    h.failure(started=clock.now, answer="ConnectError: refused", refused=True)
    assert h.give_up_at() == pytest.approx(clock.now + given_up_after)


def test_a_refusal_streak_ends_with_any_other_failure() -> None:
    clock = Clock()
    h = health(clock)
    h.success()
    h.failure(started=clock.now, answer="ConnectError: refused", refused=True)
    h.failure(started=clock.now, answer="HTTP 503: restarting")
    assert h.give_up_at() == pytest.approx(clock.now + 120.0)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("https://user:secret@api.example.com:8443/v/?token=abc", "https://api.example.com:8443/v"),
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("http://[::1]:9/", "http://[::1]:9"),
    ],
)
def test_the_url_is_named_without_credentials_or_query(url: str, named: str) -> None:
    assert InterfaceHealth("dashboards", url, 1.0).url == named
