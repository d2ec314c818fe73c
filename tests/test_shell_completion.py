"""Shell completion: `--target` names from the manifests, and a script for each shell.

The pre-commit hooks are tested through the real `pre-commit` tool in test_precommit_hooks.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


def reconcile(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_target_completes_kind_and_name_from_the_manifests_in_the_current_directory() -> None:
    done = reconcile(
        [],
        EXAMPLES,
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
