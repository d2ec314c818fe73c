"""The pre-commit hooks run by the real `pre-commit` tool: `run` with the configuration
`reconcile init` writes (the hooks of .pre-commit-hooks.yaml as `repo: local` hooks installing
the release `reconcile-pipes==VERSION` by name, found in the wheel this session built through
PIP_FIND_LINKS), and `run` with the README's config pinned to a commit SHA of a temporary git
clone of this working tree. The validate hook sees the whole manifest set whichever files are
staged, so checks that span files hold; fmt and validate refuse the same non-manifest YAML; fmt
names the file to reformat.

The hook environments are built once per module (from the wheel or the clone; dependencies
from the package index: no other network). Slow: each installs a virtualenv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from reconciler.model.version import package_version
from reconciler.settings.scaffold import template
from tests.support.dist import Dist
from tests.support.manifests import EXAMPLES, REPO

pytestmark = pytest.mark.slow

# What building the package needs, and the hooks manifest.
CLONED = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "reconciler", "schemas"]
MESSY = "apiVersion: reconcile/v1\nkind: Organization\nmetadata:\n     name: acme\nspec:\n  name: Acme\n"


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` (with a throwaway identity) and return its output."""
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding this working tree's package and hooks, committed."""
    repo = tmp_path_factory.mktemp("hooks") / "reconcile"
    repo.mkdir()
    for name in CLONED:
        source = REPO / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(source, repo / name, ignore=ignore)
        else:
            shutil.copy(source, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hooks")
    return repo


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pre-commit's cache (its hook environments), shared by the module's tests."""
    yield tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    """A user's repository: the example manifests, a project file, one unrelated YAML file,
    and the pre-commit configuration `reconcile init` writes (the release pinned by name)."""
    repo = tmp_path / "user"
    shutil.copytree(EXAMPLES, repo / "manifests")
    (repo / "reconcile.yaml").write_text("manifests: [manifests]\n", encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(
        template("pre-commit-config.yaml", package_version()), encoding="utf-8"
    )
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n", encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "manifests")
    return repo


def pre_commit(
    user: Path, home: Path, *args: str, dist: Dist | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``pre-commit ARGS`` in ``user`` as a developer would (no RECONCILE_* variables);
    with ``dist``, pip finds that built release by name."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECONCILE_")}
    env.update(PRE_COMMIT_HOME=str(home), NO_COLOR="1", **(dist.pip_env() if dist else {}))
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=user,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def edit(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in a file."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_both_hooks_pass_on_the_example_manifests(
    user: Path, home: Path, distribution: Dist
) -> None:
    done = pre_commit(user, home, "run", "--all-files", dist=distribution)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reconcile validate" in done.stdout and "reconcile fmt --check" in done.stdout
    assert done.stdout.count("Passed") == 2, done.stdout


def test_validate_hook_refuses_a_duplicate_name_when_only_that_file_is_staged(
    user: Path, home: Path, distribution: Dist
) -> None:
    telemetry = user / "manifests" / "pipes" / "telemetry.yaml"
    edit(telemetry, "  name: telemetry\nspec:", "  name: orders\nspec:")
    git(user, "add", str(telemetry))
    done = pre_commit(user, home, "run", dist=distribution)  # the staged file only
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "manifests/pipes/telemetry.yaml:6:3: metadata.name: duplicate Pipe name 'orders': "
        "also defined at manifests/pipes/orders.yaml:6:3"
    ) in done.stdout, done.stdout


def test_validate_hook_refuses_two_manifests_bound_to_one_pipe_when_one_is_staged(
    user: Path, home: Path, distribution: Dist
) -> None:
    payments = user / "manifests" / "pipes" / "payments.yaml"
    edit(payments, "1e2f3a4b5c66", "1e2f3a4b5c61")  # the orders pipe
    git(user, "add", str(payments))
    done = pre_commit(user, home, "run", dist=distribution)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "two manifests must not manage one live object" in done.stdout, done.stdout
    assert "manifests/pipes/payments.yaml:10:" in done.stdout or (
        "manifests/pipes/orders.yaml:12:" in done.stdout
    ), done.stdout


def test_both_hooks_refuse_a_yaml_file_that_is_not_a_manifest(
    user: Path, home: Path, distribution: Dist
) -> None:
    (user / "manifests" / "OWNERS.yaml").write_text("owners: [alice]\n", encoding="utf-8")
    git(user, "add", "manifests/OWNERS.yaml")
    done = pre_commit(user, home, "run", dist=distribution)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("Failed") == 2, done.stdout
    assert "manifests/OWNERS.yaml:1:1: not a reconcile manifest" in done.stdout
    assert "manifests/OWNERS.yaml:1:1: missing required field 'apiVersion'" in done.stdout


def test_fmt_hook_names_the_file_to_reformat(user: Path, home: Path, distribution: Dist) -> None:
    (user / "manifests" / "messy.yaml").write_text(MESSY, encoding="utf-8")
    git(user, "add", "manifests/messy.yaml")
    done = pre_commit(user, home, "run", "reconcile-fmt", dist=distribution)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "would reformat manifests/messy.yaml" in done.stdout


def test_the_documented_config_pinned_to_a_commit_sha_runs(
    user: Path, home: Path, hook_repo: Path
) -> None:
    guide = (REPO / "docs" / "how-to" / "ci.md").read_text(encoding="utf-8")
    snippet = guide.split("<!-- snippet: pre-commit -->\n```yaml\n", 1)[1].split("```", 1)[0]
    config = YAML(typ="safe").load(snippet)
    config["repos"][0]["repo"] = str(hook_repo)  # the documented rev is a placeholder SHA
    with (user / ".pre-commit-config.yaml").open("w", encoding="utf-8") as out:
        YAML().dump(config, out)
    # The documented way to pin: autoupdate writes the newest commit's SHA (there are no tags).
    updated = pre_commit(user, home, "autoupdate", "--bleeding-edge", "--freeze")
    assert updated.returncode == 0, updated.stdout + updated.stderr
    sha = git(user, "ls-remote", str(hook_repo), "HEAD").split()[0]
    pinned = YAML(typ="safe").load((user / ".pre-commit-config.yaml").read_text())
    assert pinned["repos"][0]["rev"] == sha
    done = pre_commit(user, home, "run", "--all-files")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("Passed") == 2, done.stdout
