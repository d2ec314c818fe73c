"""The one table of settings: project-file key, option, variable, type and built-in default.

Every setting a run reads is listed once here: its key in the project file (``rates.management``),
the parameter name commands use (``rate``), the flag and environment variable that set it, how
a text value (a variable) becomes a typed one, and its built-in default. The defaults of the
request bounds and of the client are read from the classes that own them (``RequestLimits``,
``ApiConfig``), imported only when a default is asked for so that ``validate`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reconciler.client import defaults
from reconciler.model.errors import ConfigError
from reconciler.model.resources import JsonPath


class Kind(StrEnum):
    """How a setting's text (from a variable) becomes its value."""

    TEXT = "text"
    PATHS = "paths"  # a list of paths (``manifests``)
    PATH = "path"  # a path or URL, relative to the project file when written there
    INT = "int"
    SECONDS = "seconds"


@dataclass(frozen=True)
class Setting:
    """One setting: its project-file key, the parameter it feeds, flag, variable and kind."""

    key: JsonPath
    param: str
    flag: str | None = None  # None: a positional argument (the manifest paths)
    variable: str | None = None
    kind: Kind = Kind.TEXT
    secret: bool = False
    in_project: bool = True  # credentials never are (only as an environment's references)
    in_environment: bool = False  # may be set per environment (``environments.NAME.…``)

    @property
    def name(self) -> str:
        """Return the dotted project-file key (``rates.management``)."""
        return ".".join(str(p) for p in self.key)

    def convert(self, text: str, origin: str) -> str | int | float | tuple[str, ...]:
        """Return the typed value of ``text`` read from ``origin`` (a variable's name)."""
        try:
            if self.kind is Kind.INT:
                number = int(text)
                if number < 1:
                    raise ValueError
                return number
            if self.kind is Kind.SECONDS:
                seconds = float(text)
                if not (seconds >= 0 and seconds != float("inf")):
                    raise ValueError
                return seconds
        except ValueError:
            expected = "a positive whole number" if self.kind is Kind.INT else "a number of seconds"
            raise ConfigError(f"{origin}: expected {expected}, got {text!r}") from None
        if self.kind is Kind.PATHS:
            return tuple(part for part in text.split(",") if part)
        return text


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


_SETTINGS: tuple[tuple[Setting, Callable[[], Any]], ...] = (
    (Setting(("manifests",), "paths", kind=Kind.PATHS), _constant(())),
    # Where ``{fromFile}`` secrets may be read beside the project (``model.secretfiles``).
    (Setting(("secretDirs",), "secret_dirs", kind=Kind.PATHS), _constant(())),
    (
        Setting(
            ("state",), "state_path", "--state", "RECONCILE_STATE", Kind.PATH, in_environment=True
        ),
        _constant(None),  # the project root's .reconcile/state.json (``Settings.state_address``)
    ),
    (
        Setting(
            ("workspace",), "workspace", "--workspace", "RECONCILE_WORKSPACE", in_environment=True
        ),
        _constant("default"),
    ),
    (
        Setting(
            ("organizationId",),
            "organization",
            "--organization",
            "RECONCILE_ORGANIZATION_ID",
            in_environment=True,
        ),
        _constant(None),
    ),
    (
        Setting(("baseUrl",), "base_url", "--base-url", "RECONCILE_BASE_URL", in_environment=True),
        _constant(None),
    ),
    (
        Setting(
            ("dashboardsUrl",),
            "dashboards_url",
            "--dashboards-url",
            "RECONCILE_DASHBOARDS_URL",
            in_environment=True,
        ),
        _constant(None),  # the base URL (``resolve`` says so)
    ),
    (
        Setting(
            ("keyId",),
            "key_id",
            "--key-id",
            "RECONCILE_KEY_ID",
            in_project=False,
            in_environment=True,
        ),
        _constant(None),
    ),
    (
        Setting(
            ("keySecret",),
            "key_secret",
            "--key-secret",
            "RECONCILE_KEY_SECRET",
            secret=True,
            in_project=False,
            in_environment=True,
        ),
        _constant(None),
    ),
    (
        Setting(
            ("dashboardsToken",),
            "dashboards_token",
            "--dashboards-token",
            "RECONCILE_DASHBOARDS_TOKEN",
            secret=True,
            in_project=False,
            in_environment=True,
        ),
        _constant(None),
    ),
    (
        Setting(("rates", "management"), "rate", "--rate"),
        _constant(defaults.rate_text(defaults.MANAGEMENT_RATE)),
    ),
    (
        Setting(("rates", "dashboards"), "dashboards_rate", "--dashboards-rate"),
        _constant(defaults.rate_text(defaults.DASHBOARDS_RATE)),
    ),
    (
        Setting(("parallelism",), "parallelism", "--parallelism", kind=Kind.INT),
        _constant(defaults.PARALLELISM),
    ),
    (Setting(("timeout",), "timeout", "--timeout", kind=Kind.SECONDS), _constant(defaults.TIMEOUT)),
    (
        Setting(("lockTimeout",), "lock_timeout", "--lock-timeout", kind=Kind.SECONDS),
        _constant(0.0),
    ),
    (
        Setting(
            ("waitTimeout",),
            "wait_timeout",
            "--wait-timeout",
            "RECONCILE_WAIT_TIMEOUT",
            Kind.SECONDS,
        ),
        _constant(600.0),  # ``apply.waiting.DEFAULT_WAIT_TIMEOUT`` (tested equal)
    ),
    (
        Setting(
            ("limits", "maxWait"), "max_wait", "--max-wait", "RECONCILE_MAX_WAIT", Kind.SECONDS
        ),
        _constant(defaults.MAX_WAIT),
    ),
    (
        Setting(
            ("limits", "retryBudget"),
            "retry_budget",
            "--retry-budget",
            "RECONCILE_RETRY_BUDGET",
            Kind.SECONDS,
        ),
        _constant(defaults.RETRY_BUDGET),
    ),
    (
        Setting(
            ("limits", "maxAttempts"),
            "max_attempts",
            "--max-attempts",
            "RECONCILE_MAX_ATTEMPTS",
            Kind.INT,
        ),
        _constant(defaults.MAX_ATTEMPTS),
    ),
    (
        Setting(
            ("limits", "requestDeadline"),
            "request_deadline",
            "--request-deadline",
            "RECONCILE_REQUEST_DEADLINE",
            Kind.SECONDS,
        ),
        _constant(defaults.DEADLINE),
    ),
    (
        Setting(
            ("limits", "maxResponseSize"),
            "max_response_size",
            "--max-response-size",
            "RECONCILE_MAX_RESPONSE_SIZE",
        ),
        _constant(defaults.size_text(defaults.MAX_RESPONSE_BYTES)),
    ),
    (
        Setting(
            ("limits", "maxSecretFileSize"),
            "max_secret_file_size",
            variable="RECONCILE_MAX_SECRET_FILE_SIZE",
        ),
        _constant("64KiB"),  # ``model.secretfiles.MAX_SECRET_FILE_BYTES`` (tested equal)
    ),
)

SETTINGS: tuple[Setting, ...] = tuple(setting for setting, _ in _SETTINGS)
BY_PARAM: dict[str, Setting] = {s.param: s for s in SETTINGS}
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
SETTING_PARAMS = frozenset(BY_PARAM)
_DEFAULTS: dict[str, Callable[[], Any]] = {s.param: d for s, d in _SETTINGS}
# The environment's credentials: secret references only, never literal values.
CREDENTIALS = ("keyId", "keySecret", "dashboardsToken")


def default_of(setting: Setting) -> object:
    """Return the built-in default of ``setting`` (None when it has none)."""
    return _DEFAULTS[setting.param]()


def setting_named(name: str) -> Setting:
    """Return the setting named by its parameter (``state_path``) or key (``limits.maxWait``)."""
    found = BY_PARAM.get(name) or BY_NAME.get(name)
    if found is None:
        raise ConfigError(f"unknown setting {name!r}")
    return found
