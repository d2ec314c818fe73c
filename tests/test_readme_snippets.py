"""README "Use it in your repository": every snippet is run (shell) or checked against the repo (YAML)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from ruamel.yaml import YAML

from tests.cli_helpers import SECRET_ENV
from tests.conftest import Emulator
from tests.manifest_helpers import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
SNIPPET = re.compile(r"<!-- snippet: (\S+) -->\n```(\w+)\n(.*?)```", re.DOTALL)


def snippets() -> dict[str, str]:
    return {
        m.group(1): m.group(3) for m in SNIPPET.finditer(REPO.joinpath("README.md").read_text())
    }


def load(text: str) -> Any:
    return YAML(typ="safe").load(text)


def bash(
    script: str, cwd: Path, env: dict[str, str], flags: str = "-eo pipefail"
) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    base = {k: v for k, v in os.environ.items() if k not in SECRET_ENV and k != "RECONCILE_CONFIG"}
    return subprocess.run(
        ["bash", *flags.split(), "-c", script],
        cwd=cwd,
        env={**base, **env, "PATH": path, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user's repository with the README's project file and the example manifests."""
    work = tmp_path / "repo"
    shutil.copytree(EXAMPLES, work / "manifests")
    (work / "reconcile.yaml").write_text(snippets()["project-file"], encoding="utf-8")
    return work


def test_the_section_has_exactly_the_snippets_these_tests_run() -> None:
    assert set(snippets()) == {
        "project-file",
        "first-run",
        "pre-commit",
        "github-workflow",
        "cron",
        "completion",
    }


def test_project_file_and_first_run_plan_against_the_emulator(
    repo: Path, emulator: Emulator
) -> None:
    done = bash(snippets()["first-run"], repo, emulator.env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reconcile.yaml:4" in done.stdout  # workspace comes from the project file
    assert "Plan: 2 to create, 8 to update" in done.stdout
    assert emulator.key_secret not in done.stdout + done.stderr


def test_pre_commit_snippet_names_hooks_this_repository_defines() -> None:
    config = load(snippets()["pre-commit"])
    defined = {hook["id"] for hook in load((REPO / ".pre-commit-hooks.yaml").read_text())}
    used = {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}
    assert used == defined == {"reconcile-validate", "reconcile-fmt"}


def test_pre_commit_and_workflow_snippets_pin_a_commit_sha_not_a_tag_that_does_not_exist() -> None:
    sha = re.compile(r"^[0-9a-f]{40}$")
    config = load(snippets()["pre-commit"])
    assert [bool(sha.match(str(repo["rev"]))) for repo in config["repos"]] == [True]
    steps = load(snippets()["github-workflow"])["jobs"]["reconcile"]["steps"]
    uses = [str(s["uses"]) for s in steps if "/reconcile@" in str(s.get("uses", ""))]
    assert len(uses) == 1 and sha.match(uses[0].rpartition("@")[2]), uses
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pre-commit autoupdate --bleeding-edge --freeze" in readme


def test_workflow_snippet_shares_the_state_so_a_fresh_runner_resends_no_secret() -> None:
    job = load(snippets()["github-workflow"])["jobs"]["reconcile"]
    step = next(s for s in job["steps"] if "/reconcile@" in str(s.get("uses", "")))
    state = str(step.get("with", {}).get("state") or job.get("env", {}).get("RECONCILE_STATE", ""))
    assert state.startswith(("s3://", "postgresql://")), state
    if state.startswith("s3://"):
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(job["env"])


def test_workflow_snippet_uses_only_the_actions_inputs_and_outputs() -> None:
    text = snippets()["github-workflow"]
    workflow = load(text)
    action = load((REPO / "action.yml").read_text())
    step = next(
        s for s in workflow["jobs"]["reconcile"]["steps"] if "/reconcile@" in str(s.get("uses", ""))
    )
    assert set(step["with"]) <= set(action["inputs"])
    assert set(re.findall(r"steps\.reconcile\.outputs\.([a-z-]+)", text)) <= set(action["outputs"])


def test_cron_snippet_writes_metrics_files_for_apply_and_backups(
    repo: Path, emulator: Emulator, tmp_path: Path
) -> None:
    shutil.copy(EXAMPLES / ".env.example", repo / ".env")
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    env = {**emulator.env(), "TEXTFILE_DIR": str(textfiles)}
    done = bash(snippets()["cron"], repo, env, flags="")  # a script run by cron: no -e
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in textfiles.iterdir()) == [
        "reconcile_apply.prom",
        "reconcile_backups.prom",
    ]
    families = {
        s.name: s.value
        for f in text_string_to_metric_families((textfiles / "reconcile_apply.prom").read_text())
        for s in f.samples
    }
    assert families["reconcile_run_success"] == 1


def test_completion_snippet_installs_a_bash_completion(tmp_path: Path) -> None:
    done = bash(snippets()["completion"] + "complete -p reconcile\n", tmp_path, {})
    assert done.returncode == 0, done.stderr
    assert "_reconcile_completion" in done.stdout
