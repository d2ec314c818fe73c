"""Where settings are read from: the project file and the env files.

The project file is the one ``--config``/``RECONCILE_CONFIG`` names, else the nearest
``reconcile.yaml`` upwards; an env file's variables are added to a mapping (never to
``os.environ``), each one only where no variable of that name is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.model.errors import ConfigError
from reconciler.settings.model import EnvFile, SettingsRequest

if TYPE_CHECKING:
    from reconciler.load.project import ProjectFile

__all__: list[str] = []


def project_file(request: SettingsRequest, environ: Mapping[str, str]) -> ProjectFile | None:
    """Return the loaded ``ProjectFile`` the request names or finds, or None."""
    from reconciler.load.project import find_project_file, load_project_file

    config = request.config or environ.get("RECONCILE_CONFIG") or None
    if config is not None:
        path = Path(config)
        if not path.exists():
            raise ConfigError(f"project file {config} does not exist")
        return load_project_file(path)
    found = find_project_file(Path(request.cwd) if request.cwd else None)
    return load_project_file(found) if found else None


def project_name(project: ProjectFile) -> str:
    """Return the project file's path as shown in messages."""
    from reconciler.load.project import display_path

    return display_path(project.path)


def read_env_file(path: str, environ: dict[str, str], added: dict[str, str]) -> EnvFile:
    """Add ``path``'s variables to ``environ`` (never overriding one that is set)."""
    from dotenv import dotenv_values

    if not Path(path).is_file():
        return EnvFile(path=path, found=False)
    loaded: list[str] = []
    kept: list[str] = []
    for name, value in dotenv_values(path).items():
        if value is None:
            continue
        if name in environ:
            kept.append(name)
        else:
            environ[name] = added[name] = value
            loaded.append(name)
    return EnvFile(path, True, tuple(loaded), tuple(kept))
