"""The order of precedence: one setting's value and source, from the highest source that has it.

``apply_explicit`` resolves every setting of the table again with explicit values (flags, a
Python caller's) on top, without reading any file: ``Settings.override`` and ``resolve_request``
both end here. For one setting (``_resolve_one``) the order is explicit > the chosen
environment's own value > variable (of the process or an env file) > project file > the
table's default; a built-in default is read from its owner only when asked for
(``Resolved.value``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reconciler.model.errors import ConfigError
from reconciler.settings.environments import Environment
from reconciler.settings.model import LAZY_DEFAULT, Resolved, Source, where_in_project
from reconciler.settings.table import SETTINGS, Kind, Setting

if TYPE_CHECKING:
    from reconciler.load.project import ProjectFile

__all__: list[str] = []


class Sources(Protocol):
    """What the order of precedence reads a setting from (``Settings`` is one)."""

    @property
    def environment(self) -> Environment | None: ...
    @property
    def project(self) -> ProjectFile | None: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    def env_file_of(self, variable: str) -> str | None: ...


def resolve_all(sources: Sources, given: Mapping[str, object]) -> dict[str, Resolved]:
    """Return every setting's value and source, ``given`` (explicit values) on top."""
    values: dict[str, Resolved] = {}
    for setting in SETTINGS:  # in order: the dashboards URL defaults to the base URL
        values[setting.param] = _resolve_one(setting, given.get(setting.param), sources, values)
    return values


def _resolve_one(
    setting: Setting, given: object, settings: Sources, done: Mapping[str, Resolved]
) -> Resolved:
    """Return one setting's value and source (see the module docstring for the order)."""
    if given is not None and given != ():
        if setting.kind is Kind.PATHS and isinstance(given, str | Path):
            given = (str(given),)
        elif setting.kind is Kind.PATHS and isinstance(given, Iterable):
            given = tuple(str(g) for g in given)
        where = f"flag {setting.flag}" if setting.flag else "argument"
        return Resolved(setting, given, Source.FLAG, where)
    env, project = settings.environment, settings.project
    if env is not None and setting.in_environment:
        found = _from_environment(setting, env, settings)
        if found is not None:
            return found
    if setting.variable and settings.environ.get(setting.variable):
        variable = setting.variable
        text = settings.environ[variable]
        file = settings.env_file_of(variable)
        where = f"env file {file} ({variable})" if file else f"env {variable}"
        return Resolved(
            setting,
            setting.convert(text, variable),
            Source.ENV_FILE if file else Source.ENV,
            where,
        )
    if project is not None and setting.in_project:
        stated = project.get(setting.key)
        if stated is not None:
            value: object = stated
            # The project schema makes a PATHS setting a list: the isinstance only tells mypy so.
            if setting.kind is Kind.PATHS and isinstance(stated, list):
                value = tuple(project.path_value(str(v)) for v in stated)
            elif setting.kind is Kind.PATH:
                value = project.path_value(str(stated))
            return Resolved(setting, value, Source.PROJECT, project.where(setting.key))
    if setting.param == "dashboards_url":
        base = done.get("base_url")
        if base is not None and base.value:
            return Resolved(setting, base.value, Source.DEFAULT, "default (the base URL)")
    return Resolved(setting, LAZY_DEFAULT, Source.DEFAULT, "default")


def _from_environment(setting: Setting, env: Environment, settings: Sources) -> Resolved | None:
    """Return the value ``env`` writes for ``setting``, or None when it writes none."""
    project = settings.project
    assert project is not None
    name = str(setting.key[0])
    key = (*env.key, name)
    ref = env.credentials.get(name)
    if ref is not None:
        line = where_in_project(project, key)
        try:
            value = ref.read(settings.environ)
            problem = (
                f"{line}: the environment variable {ref.variable} is not set (or empty)"
                if ref.variable
                else f"{line}: the secret file {ref.file} is empty"
            )
        except ConfigError as exc:  # an unreadable file: only a run that needs it stops
            value, problem = None, f"{line}: {exc}"
        if value is None:
            shown = f"{line} ({ref.describe()}: {'not set' if ref.variable else 'unreadable'})"
            return Resolved(setting, None, Source.ENVIRONMENT, shown, problem)
        return Resolved(setting, value, Source.ENVIRONMENT, f"{line} ({ref.describe()})")
    if name in env.values:
        return Resolved(
            setting, env.values[name], Source.ENVIRONMENT, where_in_project(project, key)
        )
    if setting.param == "workspace":
        return Resolved(
            setting, env.workspace, Source.ENVIRONMENT, f"environment {env.name} (its name)"
        )
    return None
