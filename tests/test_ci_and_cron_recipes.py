"""The CI and cron recipes of the how-to guides, run as shell scripts against the emulator with a fake
`alert` on PATH: every status they rely on is checked, and `check backups` tells a stale
backup (exit 2) from a check that could not run (exit 1)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.state.local import locked_state
from tests.support.cli import SECRET_ENV, run_cli
from tests.support.docs import page_text
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


def recipe(title: str) -> str:
    """Return the shell block that follows the bold ``title`` in a how-to's Recipes section."""
    text = page_text("how-to/ci.md") + page_text("how-to/cron.md")
    section = "".join(part.split("\n## ", 1)[0] for part in text.split("## Recipes")[1:])
    match = re.search(re.escape(f"**{title}") + r".*?```sh\n(.*?)```", section, re.S)
    assert match, f"no recipe {title!r} in the how-to guides"
    return match.group(1)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with the example manifests, an unpaced project file and a fake `alert`
    command."""
    shutil.copytree(EXAMPLES, tmp_path / "manifests")
    (tmp_path / ".git").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    alert = bin_dir / "alert"
    alert.write_text('#!/bin/sh\nprintf "%s\\n" "$*" >> "$ALERTS"\n', encoding="utf-8")
    alert.chmod(0o755)
    # Unpaced: the recipes' statuses and alerts are checked here, not the request budget.
    (tmp_path / "reconcile.yaml").write_text("rates:\n  management: none\n", encoding="utf-8")
    return tmp_path


def run_recipe(project: Path, title: str, env: dict[str, str]) -> tuple[int, list[str]]:
    """Run one recipe with ``sh`` in ``project``; return its exit status and the alerts raised."""
    alerts = project / "alerts.txt"
    alerts.unlink(missing_ok=True)
    script = project / "recipe.sh"
    script.write_text(recipe(title), encoding="utf-8")
    path = f"{project / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        ["sh", str(script)],
        cwd=project,
        env={
            **os.environ,
            **SECRET_ENV,
            "RECONCILE_CONFIG": str(project / "reconcile.yaml"),
            **env,
            "PATH": path,
            "ALERTS": str(alerts),
            "NO_COLOR": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    raised = alerts.read_text(encoding="utf-8").splitlines() if alerts.exists() else []
    return done.returncode, raised


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_check_backups_exits_2_for_stale_backups_and_1_when_it_cannot_check(
    emulator: Emulator,
) -> None:
    stale = run_cli(
        ["check", "backups", "--max-age", "26h", "--service", "staging"], emulator.env()
    )
    assert stale.exit_code == 2, stale.output
    unknown = run_cli(["check", "backups", "--max-age", "26h", "--service", "nope"], emulator.env())
    assert unknown.exit_code == 1, unknown.output
    fresh = run_cli(
        ["check", "backups", "--max-age", "26h", "--service", "analytics"], emulator.env()
    )
    assert fresh.exit_code == 0, fresh.output


def test_cron_recipe_corrects_drift_and_alerts_on_stale_backups(
    emulator: Emulator, project: Path
) -> None:
    code, alerts = run_recipe(project, "Cron", emulator.env())
    assert alerts == ["drift found", "backups are stale"]
    assert code == 1
    code, alerts = run_recipe(project, "Cron", emulator.env())
    assert alerts == ["backups are stale"]  # in sync now: the apply above converged


def test_cron_recipe_alerts_when_the_correcting_apply_fails(
    emulator: Emulator, project: Path
) -> None:
    with locked_state(project / ".reconcile" / "state.json"):
        code, alerts = run_recipe(project, "Cron", emulator.env())
    assert "apply failed" in alerts and alerts[0] == "drift found"
    assert code == 1


def test_cron_recipe_alerts_when_nothing_can_be_checked(emulator: Emulator, project: Path) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    env = {**emulator.env(), "RECONCILE_BASE_URL": down, "RECONCILE_DASHBOARDS_URL": down}
    code, alerts = run_recipe(project, "Cron", env)
    assert alerts == ["reconcile plan failed", "backup check could not run"]
    assert code == 1


def test_pull_request_recipe_posts_errors_and_fails_on_a_bad_manifest(
    emulator: Emulator, project: Path
) -> None:
    code, _ = run_recipe(project, "Pull request", emulator.env())
    assert code == 0
    assert "### reconcile plan" in (project / "plan.md").read_text(encoding="utf-8")
    orders = project / "manifests" / "pipes" / "orders.yaml"
    orders.write_text(orders.read_text().replace("engine_max_threads: 8", "engine_max_threads: 99"))
    code, _ = run_recipe(project, "Pull request", emulator.env())
    assert code == 1
    assert "engine_max_threads" in (project / "plan.md").read_text(encoding="utf-8")


def test_merge_recipe_fails_the_job_and_keeps_one_json_document_when_apply_fails(
    emulator: Emulator, project: Path
) -> None:
    with locked_state(project / ".reconcile" / "state.json"):
        code, _ = run_recipe(project, "Merge to main", emulator.env())
    assert code == 1
    assert json.loads((project / "apply-result.json").read_text())["errors"]
    code, _ = run_recipe(project, "Merge to main", emulator.env())
    assert code == 0
