"""The project file's ``environments:``: named targets, each with its own values and credentials.

An environment (``staging``, ``prod``) names any of ``organizationId``, ``baseUrl``,
``dashboardsUrl``, ``state``, ``workspace`` (default: the environment's name), ``envFile``,
``overlays`` (directories of patches, applied by the manifest loader), ``exclude`` (``Kind/name``
globs left out of that environment) and its own credentials. Credentials are secret references
(``{fromEnv: NAME}``, ``{fromFile: PATH}``), read when the environment is resolved from that
environment's variables — the process environment, then the env files — and never written into
``os.environ``, so one process can hold several environments' keys at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.model.errors import ConfigError
from reconciler.model.json import JsonValue
from reconciler.model.resources import JsonPath
from reconciler.model.secretfiles import (
    MAX_SECRET_FILE_BYTES,
    SecretFileRefused,
    SecretFiles,
    read_secret_file,
)

if TYPE_CHECKING:
    from reconciler.load.project import ProjectFile

__all__: list[str] = []


ENVIRONMENTS = "environments"
DEFAULT_ENVIRONMENT = "defaultEnvironment"
ENV_VARIABLE = "RECONCILE_ENV"


@dataclass(frozen=True)
class SecretRef:
    """A credential's reference: a variable (``fromEnv``) or a file (``fromFile``)."""

    variable: str | None = None
    file: str | None = None  # as seen from the current directory
    # Where the file may be (the project's directory and secretDirs).
    files: SecretFiles | None = field(default=None, compare=False)

    def describe(self) -> str:
        """Return ``fromEnv PROD_KEY_ID`` or ``fromFile secrets/key`` (never the value)."""
        return f"fromEnv {self.variable}" if self.variable else f"fromFile {self.file}"

    def read(self, environ: Mapping[str, str]) -> str | None:
        """Return the secret, or None when the variable is unset or empty."""
        if self.variable is not None:
            return environ.get(self.variable) or None
        assert self.file is not None
        try:
            text = read_secret_file(Path(self.file), self.files)
        except SecretFileRefused as exc:
            raise ConfigError(str(exc)) from None
        return text or None


@dataclass(frozen=True)
class Environment:
    """One entry of ``environments:`` as written (paths seen from the current directory)."""

    name: str
    values: Mapping[str, JsonValue] = field(default_factory=dict)  # organizationId, baseUrl, …
    credentials: Mapping[str, SecretRef] = field(default_factory=dict)  # keyId, …
    env_file: str | None = None
    overlays: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def workspace(self) -> str:
        """Return the environment's workspace (its name unless it names one)."""
        return str(self.values.get("workspace") or self.name)

    @property
    def key(self) -> JsonPath:
        """Return the project-file path of this environment (``environments.prod``)."""
        return (ENVIRONMENTS, self.name)


def parse_environments(project: ProjectFile) -> dict[str, Environment]:
    """Return the environments of a loaded ``ProjectFile`` (validated already), by name."""
    raw = project.get((ENVIRONMENTS,))
    files = secret_files_of(project)
    out: dict[str, Environment] = {}
    # The project schema makes each of these a mapping (or null): the isinstance tells mypy so.
    for name, stated in (raw if isinstance(raw, dict) else {}).items():
        entry = stated if isinstance(stated, dict) else {}
        credentials = {}
        for key in ("keyId", "keySecret", "dashboardsToken"):
            ref = entry.get(key)
            if isinstance(ref, Mapping):
                credentials[key] = (
                    SecretRef(variable=str(ref["fromEnv"]))
                    if "fromEnv" in ref
                    else SecretRef(file=project.path_value(str(ref["fromFile"])), files=files)
                )
        values: dict[str, JsonValue] = {
            key: entry[key]
            for key in ("organizationId", "baseUrl", "dashboardsUrl", "state", "workspace")
            if entry.get(key) is not None
        }
        if "state" in values:
            values["state"] = project.path_value(str(values["state"]))
        env_file = entry.get("envFile")
        out[str(name)] = Environment(
            name=str(name),
            values=values,
            credentials=credentials,
            env_file=project.path_value(str(env_file)) if env_file else None,
            overlays=tuple(project.path_value(str(d)) for d in _listed(entry.get("overlays"))),
            exclude=tuple(str(g) for g in _listed(entry.get("exclude"))),
        )
    return out


def secret_files_of(
    project: ProjectFile | None, dirs: object = None, max_bytes: int = MAX_SECRET_FILE_BYTES
) -> SecretFiles:
    """Return where ``{fromFile}`` secrets may be read, and how much: the project's directory
    (else the current one), then ``dirs`` (default: the project file's ``secretDirs``)."""
    if project is None or not project.path.is_file():  # none, or ``--config /dev/null``
        return SecretFiles(max_bytes=max_bytes)
    if not isinstance(dirs, tuple | list):
        dirs = [project.path_value(str(d)) for d in _listed(project.get(("secretDirs",)))]
    return SecretFiles((project.directory, *(Path(str(d)) for d in dirs)), max_bytes)


def _listed(value: JsonValue) -> list[JsonValue]:
    """Return a list value of the (validated) project file; absent or null: empty."""
    return value if isinstance(value, list) else []


def choose(
    environments: Mapping[str, Environment],
    asked: str | None,
    asked_from: str,
    default: str | None,
    project_name: str,
) -> Environment | None:
    """Return the environment ``asked`` for (or the project's default one); None when none.

    Raise ``ConfigError`` for a name the project does not define, or for ``--env`` in a
    project without environments.
    """
    from reconciler.load.schema import suggest

    if asked is None:
        asked, asked_from = default, f"{project_name}: {DEFAULT_ENVIRONMENT}"
    if asked is None:
        return None
    if not environments:
        raise ConfigError(f"{asked_from} {asked}: {project_name} defines no environments")
    found = environments.get(asked)
    if found is None:
        hint = suggest(asked, environments)
        raise ConfigError(
            f"{asked_from} {asked}: no such environment in {project_name}{hint}; "
            f"defined: {', '.join(sorted(environments))}"
        )
    return found


def needs_one(environments: Mapping[str, Environment], project_name: str) -> ConfigError:
    """Return the error of a command run without an environment when the project has some."""
    return ConfigError(
        f"{project_name} defines environments ({', '.join(sorted(environments))}): choose one "
        f"with --env NAME or {ENV_VARIABLE}, or name one under `{DEFAULT_ENVIRONMENT}:`"
    )
