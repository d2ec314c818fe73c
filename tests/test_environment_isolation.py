"""One environment never reaches another environment's live objects or state records.

The example project (``examples/environments``) copied to a temporary directory, against the
emulator. The "both environments would manage it" guard compares the identity each manifest
has after its environment's overlays and the run's flags: an overlay that points a pipe at
another environment's organization (or service) is refused before anything is sent. A flag
such as ``--organization`` given with ``--env`` changes that environment only. A workspace
belongs to the environment and organization that first wrote it: another environment cannot
rewrite its records by naming it with ``--workspace``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator import OTHER_ORG_ID
from tests.support.cli import copy_environments_example, environments_env, run_cli
from tests.support.emulator import Emulator

pytestmark = pytest.mark.integration


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example project, as the current directory."""
    return copy_environments_example(tmp_path, monkeypatch)


def _production_events(emulator: Emulator) -> dict[str, Any]:
    data = emulator.data()
    services = {
        s["id"] for s in data["services"].values() if s["organizationId"] == emulator.org_id
    }
    (pipe,) = [
        p for p in data["pipes"].values() if p["serviceId"] in services and p["name"] == "events"
    ]
    return dict(pipe)


def _analytics_of(emulator: Emulator, org: str) -> str:
    data = emulator.data()
    (found,) = [
        s["id"]
        for s in data["services"].values()
        if s["organizationId"] == org and s["name"] == "analytics"
    ]
    return str(found)


def _writes(emulator: Emulator, since: int) -> list[dict[str, Any]]:
    return [r for r in emulator.requests()[since:] if r["method"] != "GET"]


def _staging_with_production_key(project: Path) -> None:
    """Give staging production's key (one key that reaches both organizations)."""
    config = project / "reconcile.yaml"
    config.write_text(config.read_text().replace("STAGING_", "PRODUCTION_"))


@pytest.mark.parametrize("by_service_id", [False, True], ids=["organization", "service-id"])
def test_an_overlay_pointing_at_another_environments_organization_is_refused(
    project: Path, emulator: Emulator, by_service_id: bool
) -> None:
    """Staging's overlay sets the pipe's organizationId (and serviceId) to production's: the
    pipe it would manage is production's pipe, so staging's apply is refused before sending."""
    env = environments_env(project, emulator)
    created = run_cli(["apply", "--env", "production", "--auto-approve"], env)
    assert created.exit_code == 0, created.output
    assert _production_events(emulator)["scaling"]["replicas"] == 3
    _staging_with_production_key(project)
    if by_service_id:
        # A staging-only manifest naming production's service by id (and organization).
        analytics = _analytics_of(emulator, emulator.org_id)
        text = (project / "base" / "pipes" / "events.yaml").read_text()
        text = text.replace("name: events\nspec:", "name: mirror\nspec:", 1)
        text = text.replace(
            "  service: analytics",
            f"  organizationId: {emulator.org_id}\n  serviceId: {analytics}",
        )
        (project / "overlays" / "staging" / "mirror.yaml").write_text(text)
    else:
        (project / "overlays" / "staging" / "events.yaml").write_text(
            f"kind: Pipe\nmetadata:\n  name: events\nspec:\n  organizationId: {emulator.org_id}\n"
        )
    before = len(emulator.requests())
    refused = run_cli(["apply", "--env", "staging", "--auto-approve"], env)
    assert refused.exit_code == 1, refused.output
    shown = "overlays/staging/mirror.yaml" if by_service_id else "overlays/staging/events.yaml"
    assert shown in refused.stderr, refused.output
    assert "names environment production's organization" in refused.stderr
    assert "is also managed by Pipe/events in environment production" in refused.stderr, (
        refused.output
    )
    assert _writes(emulator, before) == []
    assert _production_events(emulator)["scaling"]["replicas"] == 3


def test_organization_flag_with_env_changes_that_environment_only(
    project: Path, emulator: Emulator
) -> None:
    """``--organization`` names staging's own organization: production keeps its own, so no
    object is shared and the guard reports nothing."""
    env = environments_env(project, emulator)
    result = run_cli(["plan", "--env", "staging", "--organization", OTHER_ORG_ID], env)
    assert result.exit_code == 0, result.output
    assert "also managed by" not in result.output


def test_organization_flag_with_env_that_reaches_another_environment_is_refused(
    project: Path, emulator: Emulator
) -> None:
    """``--organization`` set to production's organization for staging: each object staging
    would manage there is production's too."""
    env = environments_env(project, emulator)
    result = run_cli(["plan", "--env", "staging", "--organization", emulator.org_id], env)
    assert result.exit_code == 1, result.output
    assert "is also managed by Pipe/events in environment production" in result.stderr


def _state(project: Path) -> dict[str, Any]:
    path = project / ".reconcile" / "state.staging.json"
    loaded = json.loads(path.read_text())
    return dict(loaded)


def test_a_workspace_cannot_be_rewritten_by_another_environment(
    project: Path, emulator: Emulator
) -> None:
    """``apply --env staging --workspace production`` is refused: production's workspace
    records production's environment and organization, and its pipe record is left alone."""
    env = environments_env(project, emulator)
    assert run_cli(["apply", "--env", "production", "--auto-approve"], env).exit_code == 0
    recorded = run_cli(["state", "show", "Pipe/events", "--env", "production", "-o", "json"], env)
    production_id = recorded.json()["id"]
    before = len(emulator.requests())
    refused = run_cli(
        ["apply", "--env", "staging", "--workspace", "production", "--auto-approve"], env
    )
    assert refused.exit_code == 1, refused.output
    assert (
        f"workspace production belongs to environment production (organization "
        f"{emulator.org_id})" in refused.stderr
    ), refused.output
    assert _writes(emulator, before) == []
    again = run_cli(["state", "show", "Pipe/events", "--env", "production", "-o", "json"], env)
    assert again.json()["id"] == production_id
    planned = run_cli(["plan", "--env", "staging", "--workspace", "production"], env)
    assert planned.exit_code == 1
    assert "workspace production belongs to environment production" in planned.stderr


def test_a_workspace_without_an_owner_gets_one_on_its_first_write(
    project: Path, emulator: Emulator
) -> None:
    """A state written before workspaces recorded their owner is claimed by the next apply,
    and from then on guarded."""
    env = environments_env(project, emulator)
    assert run_cli(["apply", "--env", "staging", "--auto-approve"], env).exit_code == 0
    path = project / ".reconcile" / "state.staging.json"
    document = _state(project)
    assert document["owner"] == {"environment": "staging", "organizationId": OTHER_ORG_ID}
    del document["owner"]
    path.write_text(json.dumps(document))
    (project / "overlays" / "staging" / "events.yaml").write_text(
        "kind: Pipe\nmetadata:\n  name: events\nspec:\n  scaling: {replicas: 2}\n"
    )
    again = run_cli(["apply", "--env", "staging", "--auto-approve"], env)
    assert again.exit_code == 0, again.output
    assert _state(project)["owner"] == {"environment": "staging", "organizationId": OTHER_ORG_ID}
