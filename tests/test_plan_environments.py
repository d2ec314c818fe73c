"""How ``compute_plans`` schedules environments, and the exit code and reports of a multi-plan.

Scheduling is checked with the planning call replaced by a recorder (the HTTP side is covered
by the integration tests against emulators): environments on different keys overlap,
environments on one key run one after the other, each sees its own variables, and a failed
environment does not stop the others.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from reconciler.client.config import ApiConfig
from reconciler.model.errors import ConfigError, Location, ReconcileError
from reconciler.plan import environments as envs
from reconciler.plan.actions import Action, Op, Plan, Request
from reconciler.plan.run import PlanResult, Scope
from reconciler.state.document import State


def config(url: str, key: str) -> ApiConfig:
    return ApiConfig(url, key, "secret", url, "token")


def target(name: str, url: str, key: str, environ: dict[str, str] | None = None) -> envs.Target:
    return envs.Target(name, config(url, key), Scope(("m",), "s.json", name), environ=environ)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str | None]]:
    """Replace the planning call by one that records (event, workspace, variable) in order."""
    events: list[tuple[str, str, str | None]] = []

    async def fake(config: ApiConfig, scope: Scope, *args: Any, **kwargs: Any) -> PlanResult:
        from reconciler.model.secrets import _VARIABLES

        seen = (_VARIABLES.get() or os.environ).get("WHO")
        events.append(("start", scope.workspace, seen))
        await asyncio.sleep(0.01)
        if scope.workspace == "broken":
            raise ConfigError("broken: no key")
        events.append(("end", scope.workspace, (_VARIABLES.get() or os.environ).get("WHO")))
        op = Op.CREATE if scope.workspace == "a" else Op.NOOP
        post = (Request("POST", "/api/v2/dashboards", {"name": "d"}),)
        action = Action("Dashboard", "d", op, Location("m/d.yaml", 1, 1), requests=post)
        return PlanResult(Plan((action,)), State("s.json", b"k"), scope)

    monkeypatch.setattr(envs, "compute_plan", fake)
    return events


def test_environments_on_different_keys_overlap(recorded: list[Any]) -> None:
    targets = [target("a", "http://x", "k1"), target("b", "http://x", "k2")]
    asyncio.run(envs.compute_plans(targets))
    assert [e[0] for e in recorded] == ["start", "start", "end", "end"]


def test_environments_on_one_key_run_one_after_the_other(recorded: list[Any]) -> None:
    targets = [target("a", "http://x", "k1"), target("b", "http://x", "k1")]
    asyncio.run(envs.compute_plans(targets))
    assert [(e[0], e[1]) for e in recorded] == [
        ("start", "a"),
        ("end", "a"),
        ("start", "b"),
        ("end", "b"),
    ]


def test_each_environment_reads_its_own_variables_while_they_overlap(recorded: list[Any]) -> None:
    targets = [
        target("a", "http://x", "k1", {"WHO": "a"}),
        target("b", "http://y", "k1", {"WHO": "b"}),
    ]
    asyncio.run(envs.compute_plans(targets))
    assert sorted(recorded) == [
        ("end", "a", "a"),
        ("end", "b", "b"),
        ("start", "a", "a"),
        ("start", "b", "b"),
    ]


def test_a_failed_environment_is_reported_and_the_others_planned(recorded: list[Any]) -> None:
    unresolved = envs.Target("c", error=ConfigError("c: PROD_KEY_ID is not set"))
    targets = [target("broken", "http://x", "k1"), target("a", "http://x", "k2"), unresolved]
    plans = asyncio.run(envs.compute_plans(targets))
    assert [p.name for p in plans] == ["broken", "a", "c"]
    assert [p.failed for p in plans] == [True, False, True]
    assert isinstance(plans[0].error, ReconcileError)
    assert envs.exit_code(plans, detailed=True) == 1
    text = envs.render_text(plans)
    assert "Error: broken: no key" in text
    assert text.endswith("Environments: broken: failed; a: changes; c: failed.\n")
    markdown = envs.render_markdown(plans)
    assert "| `c` | ❌ failed | | | | | | 1 |" in markdown
    assert "c: PROD_KEY_ID is not set" in markdown


@pytest.mark.parametrize(
    ("workspaces", "detailed", "code"),
    [(["a"], True, 2), (["a"], False, 0), (["b"], True, 0), (["a", "b"], True, 2)],
    ids=["changes_detailed", "changes_plain", "no_changes", "one_of_two_changes"],
)
def test_exit_code(recorded: list[Any], workspaces: list[str], detailed: bool, code: int) -> None:
    plans = asyncio.run(envs.compute_plans([target(w, "http://x", w) for w in workspaces]))
    assert envs.exit_code(plans, detailed) == code
    assert envs.to_json(plans, code)["exitCode"] == code


def test_combined_plan_counts_every_environment(recorded: list[Any]) -> None:
    plans = asyncio.run(envs.compute_plans([target(w, "http://x", w) for w in ("a", "b")]))
    whole = envs.combined(plans)
    assert whole.summary()["create"] == 1 and whole.summary()["unchanged"] == 1
