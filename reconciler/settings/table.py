"""The one table of settings: project-file key, option, variable, type, bounds, help and default.

Every setting a run reads is listed once here: its key in the project file (``rates.management``),
the parameter name commands use (``rate``), the flag and environment variable that set it, how
a text value (a variable) becomes a typed one and the range it must lie in, the flag's help, and
its built-in default. The command line generates its options from these rows
(``reconciler.cli.options``) and declares no default of its own. The defaults of the
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
from reconciler.model.secretfiles import MAX_SECRET_FILE_BYTES

__all__ = ["BY_PARAM", "SETTING_PARAMS", "Bounds", "Kind", "Setting", "default_of"]


class Kind(StrEnum):
    """How a setting's text (from a variable) becomes its value."""

    TEXT = "text"
    PATHS = "paths"  # a list of paths (``manifests``)
    PATH = "path"  # a path or URL, relative to the project file when written there
    INT = "int"
    SECONDS = "seconds"


@dataclass(frozen=True)
class Bounds:
    """The range a number must lie in (an ``INT`` or ``SECONDS`` setting), checked wherever
    the value comes from: the command line builds its option types from these."""

    low: float = 0
    low_open: bool = True  # the low bound itself is refused (a timeout of 0 s)
    high: float | None = None
    infinite: bool = False  # ``inf`` is accepted (wait as long as it takes)

    def check(self, number: float) -> bool:
        """Tell whether ``number`` lies in the range (NaN never does)."""
        if number != number or (number == float("inf") and not self.infinite):
            return False
        above = number > self.low if self.low_open else number >= self.low
        return above and (self.high is None or number <= self.high)

    def text(self) -> str:
        """Say the range in words, for a message."""
        low = f"more than {self.low:g}" if self.low_open else f"at least {self.low:g}"
        return low + (f" and at most {self.high:g}" if self.high is not None else "")


SECONDS = Bounds()  # more than 0 s, finite
WHOLE = Bounds(low=1, low_open=False)  # a positive whole number


@dataclass(frozen=True)
class Setting:
    """One setting: its project-file key, the parameter it feeds, flag, variable, kind and help."""

    key: JsonPath
    param: str
    flag: str | None = None  # None: a positional argument (the manifest paths)
    variable: str | None = None
    kind: Kind = Kind.TEXT
    secret: bool = False
    in_project: bool = True  # credentials never are (only as an environment's references)
    in_environment: bool = False  # may be set per environment (``environments.NAME.…``)
    help: str = ""  # the flag's help, without its default and variable (added from here)
    metavar: str | None = None
    bounds: Bounds | None = None  # for INT and SECONDS
    default_text: str | None = None  # the default in words, when it is not a value (``state``)

    @property
    def name(self) -> str:
        """Return the dotted project-file key (``rates.management``)."""
        return ".".join(str(p) for p in self.key)

    @property
    def range(self) -> Bounds | None:
        """Return the range a number must lie in (its kind's when the row says none)."""
        if self.kind is Kind.INT:
            return self.bounds or WHOLE
        if self.kind is Kind.SECONDS:
            return self.bounds or SECONDS
        return None

    def convert(self, text: str, origin: str) -> str | int | float | tuple[str, ...]:
        """Return the typed value of ``text`` read from ``origin`` (a variable's name)."""
        bounds = self.range
        if bounds is not None:
            try:
                number = int(text) if self.kind is Kind.INT else float(text)
            except ValueError:
                number = None
            if number is None or not bounds.check(number):
                expected = "whole number" if self.kind is Kind.INT else "number of seconds"
                raise ConfigError(
                    f"{origin}: expected a {expected} {bounds.text()}, got {text!r}"
                ) from None
            return number
        if self.kind is Kind.PATHS:
            return tuple(part for part in text.split(",") if part)
        return text


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value


def _wait_timeout() -> float:
    # Owned by the waiting it bounds (``WaitOptions``); read only when asked for, since the
    # apply stage imports the HTTP stack, which ``validate`` and ``--help`` never load.
    from reconciler.apply.waiting import DEFAULT_WAIT_TIMEOUT

    return DEFAULT_WAIT_TIMEOUT


def _default_workspace() -> str:
    from reconciler.state.backend import DEFAULT_WORKSPACE  # owned by the state it names

    return DEFAULT_WORKSPACE


_STATE_DEFAULT = (
    ".reconcile/state.json in the project root: the nearest directory upwards with "
    "reconcile.yaml or .reconcile/, else the git top, else the current one"
)

_SETTINGS: tuple[tuple[Setting, Callable[[], Any]], ...] = (
    (Setting(("manifests",), "paths", kind=Kind.PATHS), _constant(())),
    # Where ``{fromFile}`` secrets may be read beside the project (``model.secretfiles``).
    (Setting(("secretDirs",), "secret_dirs", kind=Kind.PATHS), _constant(())),
    (
        Setting(
            ("state",),
            "state_path",
            "--state",
            "RECONCILE_STATE",
            Kind.PATH,
            in_environment=True,
            help="Where the state lives: a file, postgresql://USER@HOST:PORT/DB or s3://BUCKET/KEY",
            metavar="PATH|URL",
            default_text=_STATE_DEFAULT,
        ),
        _constant(None),  # the project root's .reconcile/state.json (``Settings.state_address``)
    ),
    (
        Setting(
            ("workspace",),
            "workspace",
            "--workspace",
            "RECONCILE_WORKSPACE",
            in_environment=True,
            help="Independent state in the same backend, e.g. one per organization",
        ),
        _default_workspace,
    ),
    (
        Setting(
            ("organizationId",),
            "organization",
            "--organization",
            "RECONCILE_ORGANIZATION_ID",
            in_environment=True,
            help="Organization id: the one read, and the default for manifests that omit "
            "spec.organizationId",
            metavar="ID",
        ),
        _constant(None),
    ),
    (
        Setting(
            ("baseUrl",),
            "base_url",
            "--base-url",
            "RECONCILE_BASE_URL",
            in_environment=True,
            help="Management API base URL",
        ),
        _constant(None),
    ),
    (
        Setting(
            ("dashboardsUrl",),
            "dashboards_url",
            "--dashboards-url",
            "RECONCILE_DASHBOARDS_URL",
            in_environment=True,
            help="Dashboards API base URL",
            default_text="the base URL",
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
            help="API key id",
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
            help="API key secret; prefer the env var",
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
            help="Dashboards bearer token",
        ),
        _constant(None),
    ),
    (
        Setting(
            ("rates", "management"),
            "rate",
            "--rate",
            help="Management request budget N/SECONDS ('none' for no limit)",
        ),
        _constant(defaults.rate_text(defaults.MANAGEMENT_RATE)),
    ),
    (
        Setting(
            ("rates", "dashboards"),
            "dashboards_rate",
            "--dashboards-rate",
            help="Dashboards request budget N/SECONDS",
        ),
        _constant(defaults.rate_text(defaults.DASHBOARDS_RATE)),
    ),
    (
        Setting(
            ("parallelism",),
            "parallelism",
            "--parallelism",
            kind=Kind.INT,
            help="Concurrent requests at most",
            bounds=Bounds(low=1, low_open=False, high=256),
        ),
        _constant(defaults.PARALLELISM),
    ),
    (
        Setting(
            ("timeout",),
            "timeout",
            "--timeout",
            kind=Kind.SECONDS,
            help="Seconds to wait for each read of a response",
        ),
        _constant(defaults.TIMEOUT),
    ),
    (
        Setting(
            ("lockTimeout",),
            "lock_timeout",
            "--lock-timeout",
            kind=Kind.SECONDS,
            help="Seconds to wait for the state lock (0: fail at once when another run holds it)",
            bounds=Bounds(low_open=False, infinite=True),
        ),
        _constant(0.0),
    ),
    (
        Setting(
            ("waitTimeout",),
            "wait_timeout",
            "--wait-timeout",
            "RECONCILE_WAIT_TIMEOUT",
            Kind.SECONDS,
            help="Seconds to wait for each pipe's state",
        ),
        _wait_timeout,
    ),
    (
        Setting(
            ("limits", "maxWait"),
            "max_wait",
            "--max-wait",
            "RECONCILE_MAX_WAIT",
            Kind.SECONDS,
            help="Cap in seconds on any wait a server asks for (429 headers)",
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
            help="Seconds one request may take, retries and waits included; also the seconds "
            "of waits and retries without a success after which the run stops sending to an API",
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
            help="Attempts per request at most",
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
            help="Seconds one attempt may take, whole body included",
        ),
        _constant(defaults.DEADLINE),
    ),
    (
        Setting(
            ("limits", "maxResponseSize"),
            "max_response_size",
            "--max-response-size",
            "RECONCILE_MAX_RESPONSE_SIZE",
            help="Largest response body read, e.g. 16MiB",
            metavar="SIZE",
        ),
        _constant(defaults.size_text(defaults.MAX_RESPONSE_BYTES)),
    ),
    (
        Setting(
            ("limits", "maxSecretFileSize"),
            "max_secret_file_size",
            variable="RECONCILE_MAX_SECRET_FILE_SIZE",
        ),
        _constant(f"{MAX_SECRET_FILE_BYTES // 1024}KiB"),  # the cap ``model.secretfiles`` owns
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
