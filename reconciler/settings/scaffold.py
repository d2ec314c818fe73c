"""A new project (``reconcile init``): the files a team starts from, written once, never twice.

``init_project(directory, version)`` writes the project file (``reconcile.yaml``, environments
shown commented out), one example manifest per kind under ``manifests/``, ``.env.example`` with
the secrets those reference and a ``.env`` holding demo values for them (so that ``plan`` runs
against the emulator at once), a ``.gitignore`` keeping the local state and every env file but
the example out of git, a ``.pre-commit-config.yaml`` whose hooks install this release by name,
and a CI workflow that uses the Action pinned to this release. A file that already exists is
never touched, whatever it holds: it is reported as skipped, so running it again is harmless
and finishes a half-made project. The templates travel inside the package (``templates/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files
from pathlib import Path

from reconciler.model.errors import ConfigError

__all__ = ["Outcome", "init_project"]


# The placeholder every template pins the release with.
VERSION_MARK = "@VERSION@"

# Where each template goes, in the order they are written and reported.
LAYOUT: tuple[tuple[str, str], ...] = (
    ("reconcile.yaml", "reconcile.yaml"),
    ("manifests/organization.yaml", "organization.yaml"),
    ("manifests/pipes/events.yaml", "pipe.yaml"),
    ("manifests/dashboards/pipes-overview.yaml", "dashboard.yaml"),
    (".env.example", "env.example"),
    (".env", "env"),
    (".gitignore", "gitignore"),
    (".pre-commit-config.yaml", "pre-commit-config.yaml"),
    (".github/workflows/reconcile.yml", "workflow.yml"),
)


class Outcome(StrEnum):
    """What ``init_project`` did with one file."""

    CREATED = "created"
    SKIPPED = "skipped"  # it existed: left as it was


@dataclass(frozen=True)
class Written:
    """One file of the new project: its path relative to the directory, and what was done."""

    path: str
    outcome: Outcome


def template(name: str, version: str) -> str:
    """Return the template ``name`` with the release ``version`` filled in."""
    text = files("reconciler.settings").joinpath("templates", name).read_text(encoding="utf-8")
    return text.replace(VERSION_MARK, version)


def init_project(directory: Path, version: str) -> Sequence[Written]:
    """Write every missing file of a new project under ``directory``; never overwrite one."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: not a directory")
    done: list[Written] = []
    for relative, name in LAYOUT:
        target = directory / relative
        if target.exists() or target.is_symlink():
            done.append(Written(relative, Outcome.SKIPPED))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            created = _create(target, template(name, version))
        except OSError as error:  # e.g. a file where a directory of the layout goes
            made = ", ".join(w.path for w in done if w.outcome is Outcome.CREATED) or "nothing"
            raise ConfigError(
                f"{target}: cannot write it ({error.strerror}); created so far: {made}"
            ) from error
        done.append(Written(relative, Outcome.CREATED if created else Outcome.SKIPPED))
    return tuple(done)


def _create(path: Path, text: str) -> bool:
    """Write a new file; return False, writing nothing, when it appeared since it was checked."""
    try:
        with path.open("x", encoding="utf-8") as out:  # "x": never replace a file
            out.write(text)
    except FileExistsError:
        return False
    return True
