"""The composite GitHub Action (action.yml): its shell steps run as a runner would, against the emulator.

The runner is a fresh virtual environment outside the checkout: the action's install step puts
the release there by name (``reconcile-pipes==`` its ``version`` input), found in the wheel
this session built (PIP_FIND_LINKS), so every later step runs the installed wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dotenv import dotenv_values
from ruamel.yaml import YAML

from tests.support.cli import run_cli
from tests.support.dist import Dist, project_version, run
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES, EXAMPLES_APPLIED
from tests.support.state_servers import S3Server

REPO = Path(__file__).resolve().parent.parent
EXPRESSION = re.compile(r"\$\{\{\s*([a-z_.-]+)\s*\}\}", re.IGNORECASE)


@dataclass
class ActionRun:
    """What one run of the action produced: its outputs, each step's exit code and log."""

    outputs: dict[str, str]
    steps: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def log(self) -> str:
        steps = "\n".join(f"--- {name} (exit {code})\n{text}" for name, code, text in self.steps)
        return f"{steps}\n--- outputs: {self.outputs}"


@dataclass(frozen=True)
class Runner:
    """Where the action runs: a venv's bin directory first on PATH, and pip's settings."""

    bin: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, distribution: Dist) -> Runner:
    """A fresh venv without reconcile (the action installs it), pip finding the built wheel."""
    venv = tmp_path_factory.mktemp("runner") / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    return Runner(venv / "bin", distribution.pip_env())


def run_action(workdir: Path, env: dict[str, str], runner: Runner, **inputs: str) -> ActionRun:
    """Run action.yml's steps in order with bash, as a runner does (-e -o pipefail)."""
    doc: dict[str, Any] = YAML(typ="safe").load((REPO / "action.yml").read_text(encoding="utf-8"))
    given = {name: str(spec.get("default", "")) for name, spec in doc["inputs"].items()}
    given.update({k.replace("_", "-"): v for k, v in inputs.items()})
    step_outputs: dict[str, dict[str, str]] = {}

    def evaluate(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            parts = match.group(1).split(".")
            if parts[0] == "inputs":
                return given[parts[1]]
            if parts[0] == "github" and parts[1] == "action_path":
                return str(REPO)
            if parts[0] == "steps" and parts[2] == "outputs":
                return step_outputs.get(parts[1], {}).get(parts[3], "")
            raise AssertionError(f"unknown expression {match.group(0)}")

        return EXPRESSION.sub(one, text)

    run = ActionRun(outputs={})
    temp = workdir / ".runner"
    temp.mkdir(exist_ok=True)
    for index, step in enumerate(doc["runs"]["steps"]):
        assert step["shell"] == "bash"
        output_file = temp / f"output-{index}"
        output_file.write_text("", encoding="utf-8")
        step_env = {k: evaluate(str(v)) for k, v in step.get("env", {}).items()}
        full_env = {
            **{k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
            **runner.env,
            **env,
            **step_env,
            "PATH": f"{runner.bin}{os.pathsep}{os.environ['PATH']}",
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "RUNNER_TEMP": str(temp),
        }
        cwd = workdir / evaluate(step.get("working-directory", "."))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            check=False,
        )
        run.steps.append((step["name"], done.returncode, done.stdout + done.stderr))
        if "id" in step:
            pairs = [
                line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line
            ]
            step_outputs[step["id"]] = dict(pairs)
        if done.returncode != 0:
            break  # the job fails here; later steps do not run
    run.outputs = {name: evaluate(spec["value"]) for name, spec in doc["outputs"].items()}
    return run


def repository(tmp_path: Path) -> Path:
    """A user's repository: the example manifests, a project file, secrets in .env.

    The project file lifts the management budget (no test here is about pacing), so that the
    action's plan and apply do not wait out the real 10 requests per 10 s.
    """
    work = tmp_path / "repo"
    shutil.copytree(EXAMPLES, work / "manifests")
    shutil.copy(EXAMPLES / ".env.example", work / ".env")
    (work / "reconcile.yaml").write_text(
        "manifests: [manifests]\nstate: .reconcile/state.json\nenvFile: .env\n"
        "rates: {management: none}\n",
        encoding="utf-8",
    )
    return work


def test_action_installs_by_default_the_release_of_the_version_declared_in_pyproject() -> None:
    doc: dict[str, Any] = YAML(typ="safe").load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert doc["inputs"]["version"]["default"] == project_version()
    install = doc["runs"]["steps"][0]
    assert "reconcile-pipes==$VERSION" in install["run"]
    assert install["env"]["VERSION"] == "${{ inputs.version }}"
    assert "action_path" not in json.dumps(doc)  # never its own checkout


def test_action_plans_to_a_markdown_file_then_applies_the_saved_plan_then_sees_no_changes(
    emulator: Emulator, tmp_path: Path, runner: Runner
) -> None:
    work = repository(tmp_path)
    env = {**emulator.env(), "RECONCILE_CONFIG": ""}
    planned = run_action(work, env, runner)
    print(planned.log)
    assert planned.outputs == {"exitcode": "2", "changes": "true", "plan-file": "reconcile-plan.md"}
    assert [code for _, code, _ in planned.steps] == [0, 0, 0]
    assert f"reconcile {project_version()}" in planned.steps[0][2]  # the installed release
    where = subprocess.run(
        [str(runner.bin / "python"), "-c", "import reconciler; print(reconciler.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Path(where.strip()).is_relative_to(runner.bin.parent), where  # not this checkout
    markdown = (work / "reconcile-plan.md").read_text(encoding="utf-8")
    assert markdown.startswith("### reconcile plan") and "orders" in markdown
    assert "apply: not requested" in planned.steps[2][2]
    assert not [r for r in emulator.requests() if r["method"] != "GET"]

    applied = run_action(work, env, runner, apply="true")
    print(applied.log)
    assert applied.outputs["changes"] == "true"
    assert f"Apply complete: {EXAMPLES_APPLIED}" in applied.steps[2][2]

    again = run_action(work, env, runner, apply="true")
    print(again.log)
    assert again.outputs == {"exitcode": "0", "changes": "false", "plan-file": "reconcile-plan.md"}
    assert "apply: the plan has no changes" in again.steps[2][2]


def test_action_fails_the_job_with_exitcode_1_when_the_plan_fails(
    emulator: Emulator, tmp_path: Path, runner: Runner
) -> None:
    work = repository(tmp_path)
    env = {**emulator.env(), "RECONCILE_CONFIG": "", "RECONCILE_KEY_SECRET": "wrong"}
    failed = run_action(work, env, runner, apply="true")
    print(failed.log)
    assert failed.outputs["exitcode"] == "1" and failed.outputs["changes"] == "false"
    assert [code for _, code, _ in failed.steps] == [0, 1]  # apply never runs
    assert "refused the credentials" in failed.steps[1][2]


def test_action_counts_a_pending_dashboard_rename_as_a_change_and_applies_it(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: Runner
) -> None:
    work = repository(tmp_path)
    env = {**emulator.env(), "RECONCILE_CONFIG": ""}
    monkeypatch.chdir(work)
    secrets = {
        k: v or "" for k, v in dotenv_values(work / ".env").items()
    }  # as the action sees them
    first = run_cli(["apply", "--auto-approve", "--new-state"], {**env, **secrets})
    assert first.exit_code == 0, first.output
    manifest = work / "manifests" / "dashboards" / "pipes-overview.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("name: pipes-overview", "name: overview"),
        encoding="utf-8",
    )
    renamed = run_action(work, env, runner, apply="true")
    print(renamed.log)
    assert renamed.outputs == {"exitcode": "2", "changes": "true", "plan-file": "reconcile-plan.md"}
    markdown = (work / "reconcile-plan.md").read_text(encoding="utf-8")
    assert "0 to delete, 1 to rename, 11 unchanged" in markdown
    assert "Apply complete: 1 applied, 11 unchanged, 0 failed." in renamed.steps[2][2]
    state = json.loads((work / ".reconcile" / "state.json").read_text(encoding="utf-8"))
    assert "Dashboard/overview" in state["resources"]
    assert "Dashboard/pipes-overview" not in state["resources"]


def test_action_warns_that_a_local_state_file_does_not_outlive_the_runner(
    emulator: Emulator, tmp_path: Path, runner: Runner
) -> None:
    work = repository(tmp_path)
    env = {**emulator.env(), "RECONCILE_CONFIG": ""}
    planned = run_action(work, env, runner)
    assert [code for _, code, _ in planned.steps] == [0, 0, 0], planned.log
    assert (
        "::warning title=reconcile state::the state is the local file .reconcile/state.json"
        in planned.steps[1][2]
    ), planned.log


def test_action_state_input_points_plan_and_apply_at_a_shared_state_without_a_warning(
    emulator: Emulator, tmp_path: Path, s3_server: S3Server, runner: Runner
) -> None:
    work = repository(tmp_path)
    shared = f"s3://{s3_server.bucket}/{tmp_path.name}/state.json"
    env = {**emulator.env(), **s3_server.env(), "RECONCILE_CONFIG": ""}
    applied = run_action(work, env, runner, apply="true", state=shared)
    assert [code for _, code, _ in applied.steps] == [0, 0, 0], applied.log
    assert "::warning" not in applied.log
    # Nine example resources plus the example pipe without pipeId, which is created.
    assert f"Apply complete: {EXAMPLES_APPLIED}" in applied.steps[2][2]
    assert not (work / ".reconcile").exists()  # nothing local: the state is in the bucket
    fresh = repository(tmp_path / "second-runner")  # another runner, the same shared state
    again = run_action(fresh, env, runner, state=shared)
    assert again.outputs["exitcode"] == "0", again.log
