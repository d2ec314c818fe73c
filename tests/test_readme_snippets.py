"""The README, Getting started and the Python API page run as written against the emulator;
the snippets of the other pages are run (shell) or checked against the repository (YAML).

Every fenced block of the executed pages is marked (see ``tests/support/docs.py``): run, written
to a file, compared as output, or left out with a reason — so no block can rot unnoticed.
"""

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

from tests.support.cli import SECRET_ENV
from tests.support.docs import all_pages, blocks, fenced_lines, missing_lines, page_text, run_page
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
SNIPPET = re.compile(r"<!-- snippet: (\S+) -->\n```(\w+)\n(.*?)```", re.DOTALL)
EXECUTED = ("README.md", "getting-started.md")
# Blocks the executed pages leave out, each for a reason the page states.
NOT_RUN = {
    ("README.md", "pip install reconcile-pipes   # the distribution; the command is `reconcile`"),
    ("README.md", "make demo"),
    ("README.md", "make test"),
    ("getting-started.md", "python3 -m venv .venv"),
    ("getting-started.md", ". .venv/bin/activate"),
    ("getting-started.md", "pip install reconcile-pipes"),
}


def snippets() -> dict[str, str]:
    """The named snippets of every page (``<!-- snippet: NAME -->``)."""
    found: dict[str, str] = {}
    for text in all_pages().values():
        found.update({m.group(1): m.group(3) for m in SNIPPET.finditer(text)})
    return found


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
    """A user's repository with the documented project file and the example manifests."""
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
    assert "pre-commit autoupdate --bleeding-edge --freeze" in page_text("how-to/ci.md")


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


def _marked(name: str) -> list[Any]:
    text = page_text(name)
    page = blocks(text)
    assert len(page) * 2 == fenced_lines(text), f"{name}: a code block is indented or unclosed"
    unmarked = [
        b.line
        for b in page
        if b.mark not in ("run", "output") and not b.mark.startswith(("write: ", "not run: "))
    ]
    assert not unmarked, (
        f"{name}: blocks at lines {unmarked} are neither run, written, output nor left out with a reason"
    )
    return page


def test_every_block_of_the_executed_pages_is_run_or_left_out_with_a_reason() -> None:
    left_out = set()
    for name in (*EXECUTED, "reference/python-api.md"):
        for block in _marked(name):
            if block.mark.startswith("not run: "):
                assert len(block.mark) > len("not run: ") + 10, block.mark
                left_out |= {(name, line.split("#")[0].strip()) for line in block.text.splitlines()}
    assert left_out == {(name, line.split("#")[0].strip()) for name, line in NOT_RUN}
    targets = set(re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), re.M))
    made = {line.split()[1] for _, line in NOT_RUN if line.startswith("make ")}
    assert made == {"demo", "test"} and made <= targets


def test_every_install_instruction_names_one_distribution() -> None:
    names = {
        match
        for text in all_pages().values()
        for match in re.findall(r"pip install ([a-z][a-z0-9_.-]*)", text)
    }
    assert names == {"reconcile-pipes"}, names


def _check_outputs(page: list[Any], outputs: dict[int, str]) -> None:
    for index, block in enumerate(page):
        if block.mark == "output":
            assert page[index - 1].mark == "run", (
                f"output block at line {block.line} follows no run block"
            )
            missing = missing_lines(block.text, outputs[index - 1])
            assert not missing, (
                f"line {block.line}: not in the output:\n{missing}\n{outputs[index - 1]}"
            )


def test_the_readme_runs_as_written_against_the_emulator(tmp_path: Path) -> None:
    page = _marked("README.md")
    status, outputs, stderr = run_page(page, tmp_path, {})
    assert status == 0, stderr + "".join(outputs.values())
    _check_outputs(page, outputs)
    assert "Plan: 0 to create, 1 to update" in "".join(outputs.values())
    assert "demo-key-secret" not in "".join(outputs.values())


def test_getting_started_then_the_python_api_run_as_written_against_the_emulator(
    tmp_path: Path,
) -> None:
    started, api = _marked("getting-started.md"), _marked("reference/python-api.md")
    assert started[-1].text == "kill %1\n"  # the page ends by stopping its emulator
    page = [*started[:-1], *api, started[-1]]
    status, outputs, stderr = run_page(page, tmp_path, {})
    assert status == 0, stderr + "".join(outputs.values())
    _check_outputs(page, outputs)
    project = tmp_path / "my-infra"
    assert sorted(p.name for p in project.iterdir()) == [
        ".gitignore",
        ".reconcile",
        "emulator.env",
        "manifests",
        "reconcile.yaml",
    ]
    api_output = "".join(
        outputs[len(started) - 1 + i] for i, b in enumerate(api) if b.mark == "run"
    )
    assert "No changes." in api_output and "0 actions" not in api_output, api_output


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page_text("README.md"))
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert "docs/getting-started.md" in relative and "bench/README.md" in relative
    # CHANGELOG.md is written with each release's changes; the site says where it is meanwhile.
    missing = [link for link in relative if not (REPO / link).exists() and link != "CHANGELOG.md"]
    assert not missing, missing
