"""Options and helpers shared by the commands: API connection flags, colour, progress.

Flags mirror the environment variables the client reads (``RECONCILE_*``); a flag wins over
its variable. Colour is used only on a TTY and never when ``NO_COLOR`` is set. Progress goes
to stderr: a tqdm bar on a TTY; elsewhere (CI logs) one plain line every ``LOG_INTERVAL``
seconds while a phase lasts, so a run paced by its request budget never looks hung and a
short run prints nothing.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from reconciler.client.api import ApiConfig
    from reconciler.state.backend import Backend

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """A number of seconds: ``FloatRange`` that also refuses NaN (and infinity unless allowed).

    ``FloatRange`` alone lets ``nan`` through (every comparison with it is false), and a
    zero or negative timeout used to surface later as a misleading connection error.
    """

    name = "seconds"

    def __init__(self, *, min_open: bool = True, allow_inf: bool = False) -> None:
        super().__init__(min=0, min_open=min_open)
        self.allow_inf = allow_inf

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number) or (math.isinf(number) and not self.allow_inf):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return number


@dataclass(frozen=True)
class Connection:
    """The connection flags of a command, as typed values (``api_options`` builds it)."""

    base_url: str | None
    key_id: str | None
    key_secret: str | None = field(repr=False)
    dashboards_url: str | None
    dashboards_token: str | None = field(repr=False)
    insecure: bool
    rate: str
    dashboards_rate: str
    parallelism: int
    timeout: float
    # The request bounds by parameter name (``limit_options``); None keeps the default.
    limits: Mapping[str, float | int | str | None] = field(default_factory=dict)

    def api_config(self) -> ApiConfig:
        """Return the client configuration (checked by the core call that uses it)."""
        from reconciler.settings.apiconfig import api_config_of

        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name in _FLAT}
        values.update(self.limits)
        origins = {name: found for name in values if (found := origin(name))}
        return api_config_of(values, insecure=self.insecure, origins=origins)


def origin(param: str, ctx: click.Context | None = None) -> str | None:
    """Name where the running command's ``param`` came from: its flag, its variable (and the
    env file that set it) or its project-file key; None when it is the built-in default."""
    from click.core import ParameterSource

    from reconciler.cli.config import settings_of
    from reconciler.settings import SETTING_PARAMS

    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return None
    found = next((p for p in ctx.command.params if p.name == param), None)
    source = ctx.get_parameter_source(param)
    if found is None or source is None:
        return None
    if source is ParameterSource.COMMANDLINE:
        return found.opts[0] if isinstance(found, click.Option) else param
    settings = settings_of(ctx)
    if settings is not None and param in SETTING_PARAMS:
        named: str | None = settings.origin(param)
        return named
    if source is ParameterSource.ENVIRONMENT:  # an option that is not a setting
        names = [found.envvar] if isinstance(found.envvar, str) else list(found.envvar or ())
        return next((n for n in names if os.environ.get(n)), names[0] if names else param)
    return None


def name_origin(exc: click.BadParameter) -> None:
    """Make click's "Invalid value for '--flag'" name the variable or project key it came from."""
    if exc.ctx is None or exc.param is None or exc.param.name is None:
        return
    where = origin(exc.param.name, exc.ctx)
    flag = exc.param.get_error_hint(exc.ctx)
    if where and where not in flag:
        exc.param_hint = f"{flag} (from {where})"


_FLAT = frozenset(f.name for f in fields(Connection)) - {"insecure", "limits"}


def collect(name: str, cls: Callable[..., Any], flags: tuple[str, ...]) -> Callable[[F], F]:
    """Hand a command the values of ``flags`` as one ``cls`` object, in its parameter ``name``."""

    def decorator(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {flag: kwargs.pop(flag) for flag in flags}
            return func(*args, **{name: cls(**values)}, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator


def api_options(func: F) -> F:
    """Add the connection flags (URLs, credentials, rate, parallelism) as ``connection``."""
    func = collect("connection", _connection, (*_FLAT, "insecure", *_LIMIT_PARAMS))(func)
    options = [
        click.option(
            "--base-url",
            envvar="RECONCILE_BASE_URL",
            help="Management API base URL [env RECONCILE_BASE_URL].",
        ),
        click.option(
            "--key-id", envvar="RECONCILE_KEY_ID", help="API key id [env RECONCILE_KEY_ID]."
        ),
        click.option(
            "--key-secret",
            envvar="RECONCILE_KEY_SECRET",
            help="API key secret; prefer the env var [env RECONCILE_KEY_SECRET].",
        ),
        click.option(
            "--dashboards-url",
            envvar="RECONCILE_DASHBOARDS_URL",
            help="Dashboards API base URL (default: the base URL) [env RECONCILE_DASHBOARDS_URL].",
        ),
        click.option(
            "--dashboards-token",
            envvar="RECONCILE_DASHBOARDS_TOKEN",
            help="Dashboards bearer token [env RECONCILE_DASHBOARDS_TOKEN].",
        ),
        click.option(
            "--insecure", is_flag=True, help="Allow plain http:// to a host that is not loopback."
        ),
        click.option(
            "--rate",
            default="10/10",
            show_default=True,
            help="Management request budget N/SECONDS ('none' for no limit).",
        ),
        click.option(
            "--dashboards-rate",
            default="100/60",
            show_default=True,
            help="Dashboards request budget N/SECONDS.",
        ),
        click.option(
            "--parallelism",
            default=8,
            show_default=True,
            type=click.IntRange(1, 256),
            help="Concurrent requests at most.",
        ),
        click.option(
            "--timeout",
            default=30.0,
            show_default=True,
            type=Seconds(),
            help="Seconds to wait for each read of a response.",
        ),
        *limit_options(),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def output_option(
    *choices: str, help: str | None = None, machine: bool = False
) -> Callable[[F], F]:
    """``-o/--output`` choosing among ``choices``; the first is the default.

    ``machine``: the format is remembered before anything else is parsed, so that even an
    error is reported in it (``reconciler.cli.machine``).
    """
    extra: dict[str, Any] = {}
    if machine:
        from reconciler.cli.machine import remember_output

        extra = {"is_eager": True, "callback": remember_output}
    return choice_option("--output", "-o", "output", choices=choices, help=help, **extra)


def choice_option(
    *decls: str, choices: Sequence[str], help: str | None = None, **extra: Any
) -> Callable[[F], F]:
    """An option taking one of ``choices``; the first is the default (and shown)."""
    return click.option(
        *decls,
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help,
        **extra,
    )


def path_option(flag: str, name: str, help: str, *, directory: bool = False) -> Callable[[F], F]:
    """An option naming a file (or, with ``directory``, a directory) to write."""
    kind = click.Path(file_okay=False) if directory else click.Path(dir_okay=False)
    return click.option(flag, name, type=kind, help=help)


def lock_timeout_option(
    help: str = "Seconds to wait for the state lock.", *, default: float = 0.0, forever: bool = True
) -> Callable[[F], F]:
    """``--lock-timeout SECONDS`` (default 0: fail at once when another run holds the lock).

    ``forever``: ``inf`` is accepted (wait as long as it takes); a loop that must go on
    (``watch``) refuses it.
    """
    return click.option(
        "--lock-timeout",
        default=default,
        show_default=True,
        type=Seconds(min_open=False, allow_inf=forever),
        help=help,
    )


_SECONDS = Seconds()
# The request bounds: (flag, type, metavar, what it bounds, its default); each flag has the
# variable RECONCILE_<FLAG>.
_LIMITS: tuple[tuple[str, Any, str | None, str, str], ...] = (
    (
        "--max-wait",
        _SECONDS,
        None,
        "Cap in seconds on any wait a server asks for (429 headers)",
        "60",
    ),
    (
        "--retry-budget",
        _SECONDS,
        None,
        "Seconds one request may take, retries and waits included; also the seconds of "
        "waits and retries without a success after which the run stops sending to an API",
        "120",
    ),
    ("--max-attempts", click.IntRange(min=1), None, "Attempts per request at most", "6"),
    (
        "--request-deadline",
        _SECONDS,
        None,
        "Seconds one attempt may take, whole body included",
        "60",
    ),
    ("--max-response-size", None, "SIZE", "Largest response body read, e.g. 16MiB", "16MiB"),
)


_LIMIT_PARAMS = tuple(flag.removeprefix("--").replace("-", "_") for flag, *_ in _LIMITS)


def _connection(**values: Any) -> Connection:
    limits = {name: values.pop(name) for name in _LIMIT_PARAMS}
    return Connection(**values, limits=limits)


def limit_options() -> list[Callable[[F], F]]:
    """The request bounds (README "Limits and safety"); each flag has its variable."""
    options: list[Callable[[F], F]] = []
    for flag, kind, metavar, what, default in _LIMITS:
        variable = "RECONCILE_" + flag.removeprefix("--").replace("-", "_").upper()
        help = f"{what} [default: {default}; env {variable}]."
        options.append(click.option(flag, envvar=variable, type=kind, metavar=metavar, help=help))
    return options


def organization_option(func: F) -> F:
    """Add ``--organization`` (default organization for manifests that omit it)."""
    return click.option(
        "--organization",
        envvar="RECONCILE_ORGANIZATION_ID",
        help="Organization id for manifests that omit spec.organizationId [env RECONCILE_ORGANIZATION_ID].",
    )(func)


def state_path_for(given: str | None, paths: tuple[str, ...]) -> Path:
    """Return the state file to use: ``--state``, else the project's default (warning on a legacy one)."""
    from reconciler.state.local import resolve_state_path

    if given:
        return Path(given)
    path, deprecation = resolve_state_path(paths)
    if deprecation:
        click.echo(f"warning: {deprecation}", err=True)
    return path


@dataclass(frozen=True)
class StateWhere:
    """``--state``/``--workspace``: where the state lives (``state_options`` builds it)."""

    state_path: str | None
    workspace: str | None

    def backend(self, paths: tuple[str, ...] = ()) -> Backend:
        """Open the backend (the caller closes it); no ``--state``: the project's default file."""
        from reconciler.state.backend import DEFAULT_WORKSPACE
        from reconciler.state.stores import open_backend

        address = self.state_path or str(state_path_for(None, paths))
        return open_backend(address, self.workspace or DEFAULT_WORKSPACE, origin("state_path"))


def use_color(stream: Any = None) -> bool:
    """Tell whether to colour output: a TTY, and NO_COLOR unset."""
    if os.environ.get("NO_COLOR"):
        return False
    target = stream or sys.stdout
    return bool(getattr(target, "isatty", lambda: False)())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion and return its result."""
    import asyncio

    return asyncio.run(coro)


class Progress:
    """A tqdm counter on stderr on a TTY (tqdm is imported only then); a periodic line elsewhere."""

    # Seconds between two progress lines when stderr is not a terminal.
    LOG_INTERVAL = 10.0

    def __init__(self, description: str, total: int | None = None, unit: str = "req") -> None:
        self._bar: Any = None
        self._log: _ProgressLog | None = None
        if not sys.stderr.isatty():
            self._log = _ProgressLog(description, total, unit, self.LOG_INTERVAL)
            return
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            desc=description,
            unit=unit,
            file=sys.stderr,
            leave=False,
            dynamic_ncols=True,
        )

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)
        elif self._log is not None:
            self._log.done += n

    def close(self) -> None:
        """Remove the bar (or stop the periodic lines)."""
        if self._bar is not None:
            self._bar.close()
        if self._log is not None:
            self._log.stop()


class _ProgressLog:
    """Prints ``reconcile: PHASE: N[/TOTAL] UNITs done after S s`` every ``interval`` seconds.

    A daemon thread, because the phase may be asleep waiting for the request budget when a
    line is due; the first line comes only after one interval, so short runs print nothing.
    """

    def __init__(self, description: str, total: int | None, unit: str, interval: float) -> None:
        import threading
        import time

        self.done = 0
        self._text = (description, total, unit)
        self._started = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        import time

        while not self._stopped.wait(interval):
            description, total, unit = self._text
            count = f"{self.done}/{total}" if total is not None else str(self.done)
            elapsed = time.monotonic() - self._started
            units = "requests" if unit == "req" else f"{unit}s"
            click.echo(
                f"reconcile: {description}: {count} {units} done after {elapsed:.0f} s",
                err=True,
            )

    def stop(self) -> None:
        """Stop the lines (the thread ends at once)."""
        self._stopped.set()
        self._thread.join()


class WaitProgress:
    """Pipes apply is waiting for: a status bar on a TTY, else a line every ``every`` seconds."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self._tty = sys.stderr.isatty()
        self._bar: Any = None
        self._last: float | None = None

    def __call__(self, pending: Sequence[Any]) -> None:
        shown = ", ".join(
            f"{w.name} {w.state} → {'/'.join(w.wanted)} ({w.seconds:.0f}s)" for w in pending[:3]
        )
        more = f", and {len(pending) - 3} more" if len(pending) > 3 else ""
        pipes_only = all(getattr(w, "subject", "pipe") == "pipe" for w in pending)
        what = "pipe(s)" if pipes_only else "resource(s)"
        text = f"waiting for {len(pending)} {what}: {shown}{more}"
        if self._tty:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(file=sys.stderr, leave=False, bar_format="{desc}", position=1)
            self._bar.set_description_str(text)
            return
        now = time.monotonic()
        if self._last is None or now - self._last >= self.every:
            self._last = now
            click.echo(text, err=True)

    def close(self) -> None:
        """Remove the status bar."""
        if self._bar is not None:
            self._bar.close()
