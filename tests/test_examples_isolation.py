"""Manifests a user keeps in the repository's `manifests/` change no test's result: tests use a
private copy of the shipped examples (tests.support.manifests.EXAMPLES), proved here by running
the tests that once read `manifests/` directly in a copy of the repository that holds extra,
untracked manifests (valid, conflicting and unplannable ones)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from tests.support.manifests import (
    DASHBOARD,
    EXAMPLES,
    KAFKA_PIPE,
    REPO,
    shipped_example_files,
    write,
)

# What a user might keep beside the examples: a pipe the server does not have, a new dashboard,
# and a draft that reuses an example's name (an error for any run that loads the directory).
EXTRA_MANIFESTS = {
    "pipes/zz-mine.yaml": KAFKA_PIPE.replace("name: orders", "name: mine").replace(
        "1e2f3a4b5c61", "1e2f3a4b5c99"
    ),
    "dashboards/zz-board.yaml": DASHBOARD.replace("overview", "my-board").replace(
        "Overview", "My board"
    ),
    "zz-draft.yaml": KAFKA_PIPE.replace("1e2f3a4b5c61", "1e2f3a4b5c98"),
}
# The tests that failed when two extra manifests sat in manifests/ (before EXAMPLES existed),
# one or two per module: validate, fmt, plan, apply, metrics, the Python API and the README.
REPRESENTATIVE = [
    "tests/test_validate_cli.py::test_validate_should_accept_every_example_manifest",
    "tests/test_validate_cli.py::test_validate_json_output_should_list_resources_when_valid",
    "tests/test_validate_cli.py::test_validate_should_exit_with_code_as_a_process",
    "tests/test_fmt_explain.py::test_fmt_leaves_example_manifests_alone",
    "tests/test_plan_cli.py::test_plan_should_use_list_endpoints_and_few_requests_for_example_manifests",
    "tests/test_plan_cli.py::test_plan_should_save_redacted_plan_file",
    "tests/test_apply_cli.py::test_secret_change_should_be_sent_once_then_not_again",
    "tests/test_core_api.py::test_apply_with_auto_approve_converges_and_a_second_plan_has_no_changes",
    "tests/test_metrics_file.py::test_plan_metrics_count_outcomes_drift_requests_and_429s_without_secrets",
    "tests/test_readme_snippets.py::test_project_file_and_first_run_plan_against_the_emulator",
    "tests/test_manifests_yaml.py",
]
# The repository files the representative tests read, besides tests/ and manifests/.
REPO_FILES = [
    "pyproject.toml",
    "reconcile.yaml",
    "README.md",
    "action.yml",
    ".pre-commit-hooks.yaml",
]


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def user_clone(root: Path, tests_from: Path = REPO / "tests") -> Path:
    """A repository copy whose examples are tracked and whose extra manifests are not."""
    repo = root / "repo"
    shutil.copytree(tests_from, repo / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("bench", "schemas", "docs", "contract"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in REPO_FILES:
        shutil.copy(REPO / name, repo / name)
    shutil.copytree(EXAMPLES, repo / "manifests")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    for name, text in EXTRA_MANIFESTS.items():
        write(repo / "manifests", name, text)
    return repo


def run_tests(repo: Path, tests: list[str], junit: Path) -> subprocess.CompletedProcess[str]:
    """Run ``pytest TESTS`` in ``repo`` (its own tests package, the installed reconciler)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECONCILE_", "PYTEST_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *tests],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_the_examples_are_the_tracked_files_of_manifests_never_a_users_extra_ones(
    tmp_path: Path,
) -> None:
    repo = user_clone(tmp_path)
    shipped = shipped_example_files(repo)
    assert shipped == sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*.*"))
    assert not set(EXTRA_MANIFESTS) & set(shipped)
    assert ".env.example" in shipped and "pipes/orders.yaml" in shipped
    assert EXAMPLES.resolve() != (REPO / "manifests").resolve()  # guard: allowed


def test_extra_manifests_in_manifests_change_no_tests_result(tmp_path: Path) -> None:
    repo = user_clone(tmp_path)
    assert (repo / "manifests" / "zz-draft.yaml").exists()
    junit = tmp_path / "junit.xml"
    done = run_tests(repo, REPRESENTATIVE, junit)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    assert counts["tests"] > len(REPRESENTATIVE) and counts["tests"] == sum(
        1 for _ in suite.iter("testcase")
    ), counts
    assert counts["failures"] == counts["errors"] == counts["skipped"] == 0, counts
    # The copy's own helpers ran (so EXAMPLES came from the copy's manifests/, extras and all).
    assert list((repo / "tests" / "support" / "__pycache__").glob("manifests.*.pyc"))


def test_no_test_reads_the_repositorys_manifests_directory_directly() -> None:
    """A guard for tests written later: the examples come from EXAMPLES, never from the tree."""
    direct = re.compile(r"""(REPO|ROOT|parent\.parent)\s*/\s*["']manifests["']""")
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        if path != REPO / "tests" / "support" / "manifests.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if direct.search(line) and "guard: allowed" not in line
    ]
    assert offenders == [], f"use tests.support.manifests.EXAMPLES instead: {offenders}"
