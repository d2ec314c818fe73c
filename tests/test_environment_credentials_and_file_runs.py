"""Environments as a new user meets them, on the example project against the emulator.

A refused key names what the chosen environment reads (its project-file key and variable),
never the generic ``RECONCILE_KEY_*`` variables it ignores; the same for the dashboards token.
A run over some of the manifests (``plan FILE --env NAME``) applies the environment's overlays
to the project's whole base set, and leaves out the overlays of manifests it does not cover.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import copy_environments_example, environments_env, run_cli
from tests.support.emulator import Emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example project, as the current directory."""
    return copy_environments_example(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("variable", "named"),
    [
        (
            "PRODUCTION_KEY_SECRET",
            [
                "environments.production.keyId (fromEnv PRODUCTION_KEY_ID)",
                "environments.production.keySecret (fromEnv PRODUCTION_KEY_SECRET)",
            ],
        ),
        (
            "PRODUCTION_DASHBOARDS_TOKEN",
            ["environments.production.dashboardsToken (fromEnv PRODUCTION_DASHBOARDS_TOKEN)"],
        ),
    ],
    ids=["key", "dashboards-token"],
)
def test_refused_credentials_name_what_the_environment_reads(
    project: Path, emulator: Emulator, variable: str, named: list[str]
) -> None:
    env = environments_env(project, emulator, **{variable: "wrong"})
    result = run_cli(["plan", "--env", "production"], env)
    assert result.exit_code == 1, result.output
    assert "refused the credentials (HTTP 401" in result.stderr
    for shown in named:
        assert shown in result.stderr, result.output
    assert "RECONCILE_KEY" not in result.stderr
    assert "RECONCILE_DASHBOARDS_TOKEN" not in result.stderr


def test_one_file_planned_for_an_environment_takes_its_overlay_and_skips_the_others(
    project: Path, emulator: Emulator
) -> None:
    """``plan base/pipes/events.yaml --env production``: the pipe gets production's overlay
    (three replicas); the overlays of the organization and the dashboard, whose base manifests
    the run does not cover, are left out rather than refused as patches of nothing."""
    env = environments_env(project, emulator)
    result = run_cli(["plan", "base/pipes/events.yaml", "--env", "production", "-o", "json"], env)
    assert result.exit_code == 0, result.output
    actions = {a["resource"]: a for a in result.json()["actions"]}
    assert list(actions) == ["Pipe/events"]
    assert actions["Pipe/events"]["operation"] == "create"
    body = actions["Pipe/events"]["requests"][0]["body"]
    assert body["scaling"]["replicas"] == 3
    assert body["settings"]["streaming_max_insert_wait_ms"] == 10000


def test_an_environment_only_manifest_is_planned_when_its_file_is_given(
    project: Path, emulator: Emulator
) -> None:
    env = environments_env(project, emulator)
    result = run_cli(
        ["plan", "overlays/staging/load-test.yaml", "--env", "staging", "-o", "json"], env
    )
    assert result.exit_code == 0, result.output
    assert [a["resource"] for a in result.json()["actions"]] == ["Dashboard/load-test"]
