"""``reconcile init [DIR]``: a new project that plans against the emulator at once, written once.

The project holds ``reconcile.yaml``, one manifest per kind, ``.env.example`` (and a git-ignored
``.env`` with demo values), ``.gitignore``, ``.pre-commit-config.yaml`` and a CI workflow using
the Action, both pinned to this release; a file that exists is never overwritten, only reported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.support.dist import DISTRIBUTION, REPO, as_a_user, project_version
from tests.support.emulator import start_emulator, stop_emulator

FILES = [
    "reconcile.yaml",
    "manifests/organization.yaml",
    "manifests/pipes/events.yaml",
    "manifests/dashboards/pipes-overview.yaml",
    ".env.example",
    ".env",
    ".gitignore",
    ".pre-commit-config.yaml",
    ".github/workflows/reconcile.yml",
]


def reconcile(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run this checkout's ``reconcile ARGS`` in ``cwd``, as a user would (no project file set)."""
    return as_a_user([sys.executable, "-m", "reconciler", *args], cwd, env)


def load(path: Path) -> Any:
    """Parse one YAML file."""
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def test_init_in_an_empty_directory_writes_a_project_the_emulator_plans_and_applies_at_once(
    tmp_path: Path,
) -> None:
    project = tmp_path / "infra"
    made = reconcile(tmp_path, "init", "infra")
    assert made.returncode == 0, made.stdout + made.stderr
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()) == sorted(
        FILES
    )
    assert f"{len(FILES)} created, 0 skipped." in made.stdout
    emulator = start_emulator(cwd=project)  # `reconcile emulator --port 0`, a fresh seed
    try:
        planned = reconcile(project, "plan", "--detailed-exitcode", env=emulator.env())
        assert planned.returncode == 2, planned.stdout + planned.stderr
        assert "Plan: 2 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged" in (
            planned.stdout
        ), planned.stdout
        applied = reconcile(project, "apply", "--auto-approve", env=emulator.env())
        assert applied.returncode == 0, applied.stdout + applied.stderr
        again = reconcile(project, "plan", "--detailed-exitcode", env=emulator.env())
        assert again.returncode == 0, again.stdout + again.stderr
    finally:
        stop_emulator(emulator)
    assert (project / ".reconcile" / "state.json").is_file()


def test_init_never_overwrites_a_file_and_says_which_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "reconcile.yaml").write_text("manifests: [mine]\n", encoding="utf-8")
    first = reconcile(tmp_path, "init")
    assert first.returncode == 0, first.stderr
    assert "skipped  reconcile.yaml  (exists, left as it is)" in first.stdout
    assert f"{len(FILES) - 1} created, 1 skipped." in first.stdout
    assert (tmp_path / "reconcile.yaml").read_text(encoding="utf-8") == "manifests: [mine]\n"
    before = {name: (tmp_path / name).read_bytes() for name in FILES}
    (tmp_path / "manifests" / "pipes" / "events.yaml").write_text("# edited\n", encoding="utf-8")
    again = reconcile(tmp_path, "init")
    assert again.returncode == 0, again.stderr
    assert f"0 created, {len(FILES)} skipped." in again.stdout
    assert (tmp_path / "manifests" / "pipes" / "events.yaml").read_text() == "# edited\n"
    assert {n: (tmp_path / n).read_bytes() for n in FILES if "events" not in n} == {
        n: b for n, b in before.items() if "events" not in n
    }


def test_init_refuses_a_file_given_as_the_directory(tmp_path: Path) -> None:
    (tmp_path / "infra").write_text("", encoding="utf-8")
    done = reconcile(tmp_path, "init", "infra")
    assert done.returncode != 0
    assert "infra" in done.stderr and not (tmp_path / "reconcile.yaml").exists()


def test_init_names_the_file_it_cannot_write_and_what_it_created_before(tmp_path: Path) -> None:
    (tmp_path / "manifests").write_text("", encoding="utf-8")  # a file where a directory goes
    done = reconcile(tmp_path, "init")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "manifests/organization.yaml: cannot write it" in done.stderr
    assert "created so far: reconcile.yaml" in done.stderr
    assert "Traceback" not in done.stderr


def test_init_gitignore_keeps_state_and_env_files_out_of_git_but_not_the_example(
    tmp_path: Path,
) -> None:
    assert reconcile(tmp_path, "init").returncode == 0
    (tmp_path / ".reconcile").mkdir()
    (tmp_path / ".reconcile" / "state.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".env.production").write_text("X=1\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(staged) == sorted(f for f in FILES if f != ".env")


def test_init_pre_commit_hooks_are_the_shipped_hooks_pinned_to_this_release_by_name(
    tmp_path: Path,
) -> None:
    assert reconcile(tmp_path, "init").returncode == 0
    config = load(tmp_path / ".pre-commit-config.yaml")
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    written = {hook["id"]: hook for hook in config["repos"][0]["hooks"]}
    shipped = {hook["id"]: hook for hook in load(REPO / ".pre-commit-hooks.yaml")}
    assert written.keys() == shipped.keys()
    for name, hook in written.items():
        assert hook.pop("additional_dependencies") == [f"{DISTRIBUTION}=={project_version()}"]
        assert hook == {k: v for k, v in shipped[name].items() if k != "description"}, name


def test_init_workflow_uses_the_action_at_this_release_with_inputs_it_declares(
    tmp_path: Path,
) -> None:
    assert reconcile(tmp_path, "init").returncode == 0
    workflow = load(tmp_path / ".github" / "workflows" / "reconcile.yml")
    action = load(REPO / "action.yml")
    steps = workflow["jobs"]["reconcile"]["steps"]
    step = next(s for s in steps if "/reconcile@" in str(s.get("uses", "")))
    assert step["uses"].endswith(f"@v{project_version()}")
    assert set(step["with"]) <= set(action["inputs"])
    assert load(tmp_path / "reconcile.yaml")["manifests"] == ["manifests"]
    validated = reconcile(tmp_path, "validate")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "3 manifests valid (1 Pipe, 1 Organization, 1 Dashboard)" in validated.stdout


@pytest.mark.parametrize("kind", ["Pipe", "Organization", "Dashboard"])
def test_init_writes_one_example_manifest_of_each_kind(tmp_path: Path, kind: str) -> None:
    assert reconcile(tmp_path, "init").returncode == 0
    kinds = [load(p)["kind"] for p in sorted((tmp_path / "manifests").rglob("*.yaml"))]
    assert kinds.count(kind) == 1
