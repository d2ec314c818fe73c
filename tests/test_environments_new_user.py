"""Environments as a new user meets them, on the example project against the emulator.

A refused key names what the chosen environment reads (its project-file key and variable),
never the generic ``RECONCILE_KEY_*`` variables it ignores; the same for the dashboards token.
A run over some of the manifests (``plan FILE --env NAME``) applies the environment's overlays
to the project's whole base set, and leaves out the overlays of manifests it does not cover.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli
from tests.conftest import Emulator

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "environments"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example project, as the current directory."""
    target = tmp_path / "environments"
    shutil.copytree(EXAMPLE, target)
    shutil.copy(target / ".env.example", target / ".env")
    monkeypatch.chdir(target)
    return target


def _env(project: Path, emulator: Emulator, **more: str) -> dict[str, str]:
    return {
        "RECONCILE_CONFIG": str(project / "reconcile.yaml"),
        "RECONCILE_BASE_URL": emulator.url,
        "RECONCILE_DASHBOARDS_URL": emulator.url,
        **more,
    }


def test_a_refused_key_names_the_variables_the_environment_reads(
    project: Path, emulator: Emulator
) -> None:
    env = _env(project, emulator, PRODUCTION_KEY_SECRET="wrong")
    result = run_cli(["plan", "--env", "production"], env)
    assert result.exit_code == 1, result.output
    assert "refused the credentials (HTTP 401" in result.stderr
    assert "environments.production.keyId (fromEnv PRODUCTION_KEY_ID)" in result.stderr
    assert "environments.production.keySecret (fromEnv PRODUCTION_KEY_SECRET)" in result.stderr
    assert "RECONCILE_KEY" not in result.stderr


def test_a_refused_dashboards_token_names_the_variable_the_environment_reads(
    project: Path, emulator: Emulator
) -> None:
    env = _env(project, emulator, PRODUCTION_DASHBOARDS_TOKEN="wrong")
    result = run_cli(["plan", "--env", "production"], env)
    assert result.exit_code == 1, result.output
    assert "refused the credentials (HTTP 401" in result.stderr
    assert (
        "environments.production.dashboardsToken (fromEnv PRODUCTION_DASHBOARDS_TOKEN)"
        in result.stderr
    ), result.output
    assert "RECONCILE_DASHBOARDS_TOKEN" not in result.stderr


def test_one_file_planned_for_an_environment_takes_its_overlay_and_skips_the_others(
    project: Path, emulator: Emulator
) -> None:
    """``plan base/pipes/events.yaml --env production``: the pipe gets production's overlay
    (three replicas); the overlays of the organization and the dashboard, whose base manifests
    the run does not cover, are left out rather than refused as patches of nothing."""
    env = _env(project, emulator)
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
    env = _env(project, emulator)
    result = run_cli(
        ["plan", "overlays/staging/load-test.yaml", "--env", "staging", "-o", "json"], env
    )
    assert result.exit_code == 0, result.output
    assert [a["resource"] for a in result.json()["actions"]] == ["Dashboard/load-test"]
