"""The built distribution, as a user gets it: a wheel and an sdist, and a venv outside the checkout.

``python -m build`` makes the sdist from this tree and the wheel from that sdist (so whatever
the sdist forgets, the wheel lacks too), once per test session whatever the number of xdist
workers (a file lock in the session's shared temporary directory). ``installed_venv`` creates a
fresh virtual environment there and installs the release *by name*
(``reconcile-pipes==VERSION``) with the build's directory as a find-links source, as the Action
and the hooks do; its dependencies come from the machine's usual package sources (the pip cache,
a configured index). Nothing of the checkout is on that venv's path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION = "reconcile-pipes"


def project_version() -> str:
    """The version pyproject.toml declares: the one home of the version."""
    with (REPO / "pyproject.toml").open("rb") as f:
        version: str = tomllib.load(f)["project"]["version"]
    return version


@dataclass(frozen=True)
class Dist:
    """A built release: the directory holding it, its wheel and its sdist."""

    directory: Path
    wheel: Path
    sdist: Path

    def requirement(self) -> str:
        """The release pinned by name, as a user installs it."""
        return f"{DISTRIBUTION}=={project_version()}"

    def pip_env(self) -> dict[str, str]:
        """Variables that make pip find this release by name (beside its usual sources)."""
        links = " ".join(filter(None, [str(self.directory), os.environ.get("PIP_FIND_LINKS")]))
        return {"PIP_FIND_LINKS": links, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def shared_root(basetemp: Path) -> Path:
    """The temporary directory every xdist worker of this session shares."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def as_a_user(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, *, hide: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd`` as a user would: none of the suite's ``RECONCILE_*`` variables
    (nor those named in ``hide``), ``env`` on top; its exit status is the caller's to check."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith("RECONCILE_") and k not in hide
    }
    return subprocess.run(
        command,
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; fail with its whole output when it fails."""
    done = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"{' '.join(args)} -> {done.returncode}\n{done.stdout}{done.stderr}"
    )
    return done.stdout + done.stderr


def built_distribution(root: Path) -> Dist:
    """Build the sdist and the wheel into ``root/dist`` (once: later callers reuse them)."""
    directory = root / "dist"
    with FileLock(str(root / "dist.lock")):
        if not (directory / "built").exists():
            # --no-isolation: the backend (hatchling) is a test dependency already installed,
            # so building needs no network.
            run(
                [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(directory)],
                cwd=REPO,
            )
            (directory / "built").touch()
    wheel = next(directory.glob("reconcile_pipes-*.whl"))
    sdist = next(directory.glob("reconcile_pipes-*.tar.gz"))
    return Dist(directory, wheel, sdist)


def installed_venv(root: Path, dist: Dist) -> Path:
    """A fresh venv at ``root/venv`` with the release installed by name; return its bin dir."""
    venv = root / "venv"
    with FileLock(str(root / "venv.lock")):
        if not (venv / "installed").exists():
            run([sys.executable, "-m", "venv", str(venv)], cwd=root)
            run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", dist.requirement()],
                cwd=root,
                env=dist.pip_env(),
            )
            (venv / "installed").touch()
    return venv / "bin"
