"""Which store a ``--state`` address names: a path (local file), ``postgresql://…`` or ``s3://…``.

``open_backend`` is the one place that chooses a backend. It lives apart from the backend
protocol (``reconciler.state.backend``) so that the backends, which build on that protocol's
helpers, and the chooser, which imports the backends, form no import circle.
"""

from __future__ import annotations

import re
from pathlib import Path

from reconciler.model.errors import ConfigError
from reconciler.state.backend import DEFAULT_WORKSPACE, Backend, check_workspace, workspace_name

__all__ = ["open_backend"]


def open_backend(
    address: str, workspace: str = DEFAULT_WORKSPACE, origin: str | None = None
) -> Backend:
    """Return the backend for a ``--state`` address and workspace.

    ``origin`` names where the address came from (``--state``, ``RECONCILE_STATE``, a
    project-file key): an address refused here, or a database that cannot be reached, is
    reported naming it (default: ``--state``).
    """
    check_workspace(workspace)
    if address.startswith(("postgresql://", "postgres://")):
        from reconciler.state.postgres import PostgresBackend

        return PostgresBackend(address, workspace, origin)
    if address.startswith("s3://"):
        from reconciler.state.s3 import S3Backend

        return S3Backend(address, workspace, origin)
    if re.match(r"^[a-z][a-z0-9+.-]*://", address):
        raise ConfigError(
            f"{origin or '--state'} {address.split('://')[0]}://… is not a known backend: use a "
            "path, postgresql://USER@HOST:PORT/DB or s3://BUCKET/KEY"
        )
    from reconciler.state.local import LocalBackend

    return LocalBackend(Path(workspace_name(address, workspace)))
