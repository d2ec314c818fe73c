"""``Scope``: what one run reconciles (manifests, state, environment), and its first steps.

Kept apart from ``run`` and light to import: the command line builds the scope before it
imports the planning and apply stages.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from reconciler.load.manifestfiles import find_manifest_files
from reconciler.load.manifests import load_resources
from reconciler.load.overlays import Layering, load_environment
from reconciler.load.reading import Reading
from reconciler.model.errors import ReconcileError
from reconciler.model.resources import KINDS, Resource
from reconciler.state.backend import DEFAULT_WORKSPACE, Backend
from reconciler.state.stores import open_backend

__all__ = ["DEPRECATED_READING", "Scope"]


DEPRECATED_READING = (
    "Scope.start_reading() and reading= are deprecated and will be removed in the next release: "
    "manifests are read in one process, so compute_plan and ApplyRequest read them themselves"
)


@dataclass(frozen=True)
class Scope:
    """What a run reconciles: manifest paths, where the state lives, the default organization."""

    paths: tuple[str, ...]
    state: str  # a file path, postgresql://… or s3://… (``--state``)
    workspace: str = DEFAULT_WORKSPACE
    organization: str | None = None
    # An environment's overlays and excludes (``reconciler.load.overlays``); None: the base.
    layering: Layering | None = None
    environment: str | None = None  # the environment's name, for messages and reports
    # The manifest paths the project file names (None: the run's paths are the whole project).
    project_paths: tuple[str, ...] | None = None
    # Where ``state`` came from, for its errors: ``--state``, ``RECONCILE_STATE``, a project key.
    state_origin: str | None = None

    def backend(self) -> Backend:
        """Open the state backend (the caller closes it)."""
        return open_backend(self.state, self.workspace, self.state_origin)

    def load(self) -> list[Resource]:
        """Read the scope's manifests (as ``compute_plan`` and ``apply_plan`` do)."""
        return load_environment(self.paths, organization=self.organization, layering=self.layering)

    def start_reading(self) -> Reading:
        """Deprecated (removed in the next release): ``load()`` when ``result()`` is asked."""
        warnings.warn(DEPRECATED_READING, DeprecationWarning, stacklevel=2)
        return Reading(self.load)

    def complete_kinds(self) -> frozenset[str] | None:
        """Return the kinds of which ``paths`` hold every manifest the project has.

        None when they hold all of them (or no project file names its manifests): then a
        rename of ``metadata.name`` may be inferred and prune may delete pipes. The project's
        manifests the run leaves out are read only to learn their kinds; if they cannot be
        read, no kind counts as complete.
        """
        if self.project_paths is None:
            return None
        try:
            project = {Path(f).resolve() for f in find_manifest_files(self.project_paths)}
            mine = {Path(f).resolve() for f in find_manifest_files(self.paths)}
            left_out = sorted(project - mine)
            if not left_out:
                return None
            kinds = {
                r.kind for r in load_resources(left_out, default_organization=self.organization)
            }
        except ReconcileError:
            return frozenset()
        return frozenset(KINDS) - kinds
