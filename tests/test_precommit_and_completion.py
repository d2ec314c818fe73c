"""The pre-commit hooks (run as pre-commit would: entry + matching files) and shell completion."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parent.parent
MESSY = "apiVersion: reconcile/v1\nkind: Organization\nmetadata:\n     name: acme\nspec:\n  name: Acme\n"


def reconcile(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def run_hook(hook_id: str, repo: Path) -> subprocess.CompletedProcess[str]:
    """Run a hook as pre-commit does: its entry with every tracked file its filters select."""
    hooks = YAML(typ="safe").load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == hook_id)
    assert hook["language"] == "python" and hook["types"] == ["yaml"]
    pattern = re.compile(hook["files"])
    files = sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if p.suffix in (".yaml", ".yml") and pattern.search(p.relative_to(repo).as_posix())
    )
    entry = shlex.split(hook["entry"])
    assert entry[0] == "reconcile"
    return reconcile([*entry[1:], *files], repo)


def test_pre_commit_hooks_validate_and_check_format_of_the_manifests_only(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "manifests", repo / "manifests")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n", encoding="utf-8")
    assert run_hook("reconcile-validate", repo).returncode == 0
    assert run_hook("reconcile-fmt", repo).returncode == 0

    (repo / "manifests" / "messy.yaml").write_text(MESSY, encoding="utf-8")
    fmt = run_hook("reconcile-fmt", repo)
    assert fmt.returncode == 1 and "would reformat manifests/messy.yaml" in fmt.stdout
    (repo / "manifests" / "bad.yaml").write_text(MESSY.replace("Acme", "[1, 2]"), encoding="utf-8")
    validate = run_hook("reconcile-validate", repo)
    assert validate.returncode == 1
    assert "manifests/bad.yaml:6:3: spec.name: expected a string, got a list" in validate.stdout


def test_target_completes_kind_and_name_from_the_manifests_in_the_current_directory() -> None:
    done = reconcile(
        [],
        REPO / "manifests",
        _RECONCILE_COMPLETE="bash_complete",
        COMP_WORDS="reconcile plan --target Pipe/c",
        COMP_CWORD="3",
    )
    assert done.stdout.splitlines() == ["plain,Pipe/clickstream", "plain,Pipe/customers-cdc"]


def test_completion_command_prints_a_script_for_each_shell() -> None:
    for shell, marker in (
        ("bash", "complete -o nosort -F"),
        ("zsh", "#compdef reconcile"),
        ("fish", "complete --no-files --command reconcile"),
    ):
        done = reconcile(["completion", shell], REPO)
        assert done.returncode == 0 and marker in done.stdout, done.stdout[:200]
