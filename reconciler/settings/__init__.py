"""Settings: where every value a run uses comes from, as a Python API the CLI itself uses.

``resolve(explicit, config=…, env_file=…, environment=…)`` reads the project file
(``reconcile.yaml``, found from the current directory upwards), its env files and environment
variables, and returns immutable ``Settings``: each value with its source (``Resolved``), the
chosen ``Environment`` (overlays, exclude), and builders for the client's ``ApiConfig`` and the
plan's ``Scope``. ``Settings.reload()`` resolves the same request again. ``list_environments``
and ``resolve_environments`` serve runs over several environments; nothing here writes to
``os.environ``.
"""

from reconciler.settings.environments import Environment, SecretRef
from reconciler.settings.model import NO_PATHS, EnvFile, Resolved, SettingsRequest, Source
from reconciler.settings.resolve import (
    Settings,
    list_environments,
    resolve,
    resolve_environments,
    resolve_request,
)
from reconciler.settings.table import SETTING_PARAMS, SETTINGS, Setting, default_of

__all__ = [
    "NO_PATHS",
    "SETTINGS",
    "SETTING_PARAMS",
    "EnvFile",
    "Environment",
    "Resolved",
    "SecretRef",
    "Setting",
    "Settings",
    "SettingsRequest",
    "Source",
    "default_of",
    "list_environments",
    "resolve",
    "resolve_environments",
    "resolve_request",
]
