"""``reconcile watch``: plan on an interval and correct drift, with health, metrics and a page.

The command parses its options (those of ``plan`` and ``apply``, plus the loop's) and hands
``reconciler.watch.run_watch`` a loader that resolves the settings again for every cycle: the
env files are read again (a rotated key is picked up) and, after SIGHUP, the project file too;
values given on the command line stay as given. Each cycle prints one log line.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.options import choice_option, setting_option
from reconciler.cli.plan import PlanFlags, plan_options
from reconciler.model.text import shown

if TYPE_CHECKING:
    from reconciler.settings import Settings

__all__: list[str] = []


F = TypeVar("F", bound=Callable[..., Any])

_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class Duration(click.FloatRange):
    """A duration: ``30s``, ``5m``, ``1h``, ``500ms`` or a number of seconds; more than 0.

    ``what`` names the value in the message that refuses zero or less ("the interval must be
    more than 0"); click's "Invalid value for '--flag'" names where it came from.
    """

    name = "duration"

    def __init__(self, what: str = "duration") -> None:
        super().__init__(min=0, min_open=True)
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float | int):
            return float(value)
        match = _DURATION.match(str(value))
        if match is None:
            self.fail(f"{value!r} is not a duration such as 30s, 5m or 1h.", param, ctx)
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        if seconds <= 0:
            self.fail(
                f"the {self.what} must be more than 0 (got {value!r}); give a duration such as "
                "30s, 5m or 1h.",
                param,
                ctx,
            )
        return seconds


class Fraction(click.ParamType[float]):
    """A share of the interval: ``10%`` or ``0.1``, from 0 to 100 %."""

    name = "fraction|percent"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "FRACTION|PERCENT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            number = -1.0
        if not 0 <= number <= 1:
            self.fail(f"{value!r} is not a share of the interval such as 10%.", param, ctx)
        return number


# The loop's timings: (declarations, type, default as a user writes it, help).
_TIMINGS: tuple[tuple[tuple[str, ...], click.ParamType[float], str, str], ...] = (
    (("--interval",), Duration("interval"), "5m", "Time between cycles (30s, 5m, 1h)."),
    (
        ("--jitter",),
        Fraction(),
        "10%",
        "Random delay added to each interval: 0–100% of the interval, as a percent (10%) or a "
        "fraction (0.1).",
    ),
    (
        ("--lease", "lease_seconds"),
        Duration("lease"),
        "30s",
        "With a shared state: a standby takes over at most this long after the leader dies.",
    ),
)


def timing_options(func: F) -> F:
    """Add ``--interval``, ``--jitter`` and ``--lease`` (defaults shown as written)."""
    for decls, kind, default, help in reversed(_TIMINGS):
        func = click.option(*decls, default=default, show_default=True, type=kind, help=help)(func)
    return func


@click.command("watch")
@plan_options
@timing_options
@choice_option(
    "--mode",
    choices=("detect", "correct"),  # reconciler.watch.Mode, imported when the command runs
    help="detect: plan and report drift, never write; correct: apply the plan when it has changes.",
)
@click.option(
    "--listen",
    default="127.0.0.1:9464",
    show_default=True,
    metavar="HOST:PORT",
    help="Address of /healthz, /readyz, /metrics, / and /api/status (port 0: any free port).",
)
@choice_option(
    "--log-format", choices=("text", "json"), help="One line per cycle, as text or JSON."
)
@setting_option(
    "lock_timeout",
    help="Seconds a correcting cycle waits for the state lock (another apply may hold it)",
    default=lambda: _own_default("lock_timeout"),
    finite=True,
)
@pass_settings
def watch(
    settings: Settings,
    flags: PlanFlags,
    insecure: bool,
    interval: float,
    mode: str,
    jitter: float,
    lease_seconds: float,
    listen: str,
    log_format: str,
) -> int:
    """Plan PATHS every --interval; in correct mode apply the drift found (one leader at a time).

    \b
    The management request budget defaults to half the key's (--rate or the project's
    rates.management): a CI apply with the same key still has room.
    """
    from reconciler.cli.environments import announce_environment
    from reconciler.cli.terminal import run
    from reconciler.settings import Source
    from reconciler.state.backend import Holder
    from reconciler.watch import Mode, Watcher, WatchOptions, WatchStatus, run_watch
    from reconciler.watch.run import parse_listen

    parse_listen(listen)  # a malformed address fails before anything else
    # The loop waits its own default for the lock unless a flag, variable or project says.
    given = settings.resolved("lock_timeout").source is not Source.DEFAULT
    options = WatchOptions(
        interval=interval,
        mode=Mode(mode),
        jitter=jitter,
        lease=lease_seconds,
        **({"lock_timeout": settings.seconds("lock_timeout")} if given else {}),
    )
    announce_environment()  # --env NAME: say which, refuse one that overlaps another
    loader = _Loader(settings, flags, insecure)
    first = loader(False)
    scope = first.scope
    holder = Holder.current("reconcile watch")
    backend = scope.backend()
    try:
        description = backend.description
        lease = backend.lease(holder, lease_seconds)  # it keeps a connection of its own
    finally:
        backend.close()
    status = WatchStatus(
        mode=mode,
        interval=interval,
        state=description,
        workspace=scope.workspace,
        environment=scope.environment,
        organization=scope.organization,
    )
    log = _Log(log_format)
    watcher = Watcher(loader, lease, options, status, on_cycle=log.cycle, notice=log.notice)
    started = (
        f"watch: {mode} every {interval:g}s (+{jitter:.0%} jitter) on {description}; "
        f"management budget {first.config.rate}"
    )
    run(
        run_watch(
            watcher,
            listen,
            on_start=lambda: log.notice(started),  # not before a held local state refuses
            on_listen=lambda url: log.notice(f"watch: listening on {url}"),
        )
    )
    log.notice("watch: stopped; lease released.")
    return 0


def _own_default(name: str) -> object:
    """Return the loop's own default of ``name`` (``WatchOptions``), for ``--help``."""
    from dataclasses import fields

    from reconciler.watch.loop import WatchOptions

    return next(f.default for f in fields(WatchOptions) if f.name == name)


class _Loader:
    """The settings of each cycle, from the core's resolver (``reconciler.settings``).

    Flags stay as given. The project file and env files are read again on SIGHUP and whenever
    an env file changed (a rotated key or secret is picked up at the next cycle); manifests'
    ``fromEnv`` references read the variables of the settings in force.
    """

    def __init__(self, settings: Settings, flags: PlanFlags, insecure: bool) -> None:
        from reconciler.settings import Source

        self.settings = settings
        self.flags = flags
        self.insecure = insecure
        self.rate_given = settings.resolved("rate").source is Source.FLAG
        self.stamp = self._stamp()

    def _stamp(self) -> tuple[tuple[str, float, int], ...]:
        import os

        out = []
        for env_file in self.settings.env_files:
            try:
                found = os.stat(env_file.path)
                out.append((env_file.path, found.st_mtime, found.st_size))
            except OSError:
                out.append((env_file.path, 0.0, -1))
        return tuple(out)

    def __call__(self, reload_project: bool) -> Any:
        from reconciler.watch import Target

        settings = self.settings
        if reload_project or self._stamp() != self.stamp:
            settings = self.settings = settings.reload()
            self.stamp = self._stamp()
        settings.require_environment()
        config = settings.api_config(insecure=self.insecure)
        scope, variables = settings.scope(), dict(settings.environ)
        if not self.rate_given:
            config = replace(config, rate=_half(config.rate))
        options = self.flags.plan_options(settings)
        return Target(config, scope, options, variables, settings.secret_files())


def _half(rate: Any) -> Any:
    """Half a request budget (at least one request), so a CI run with the same key has room."""
    if rate.unlimited:
        return rate
    return replace(rate, count=max(1, rate.count // 2))


class _Log:
    """One line per cycle (and per notice), as text or JSON, on stdout."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def _emit(self, record: dict[str, Any], text: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if self.fmt == "json":
            line = json.dumps({"time": stamp, **record}, ensure_ascii=False)
        else:  # ``text`` escaped its outside words already (a line per error is ours)
            line = f"{stamp} {text}"
        click.echo(line)
        sys.stdout.flush()

    def notice(self, message: str) -> None:
        """Log a notice (start, leadership changes, stop)."""
        self._emit({"event": "notice", "message": message}, shown(message))

    def cycle(self, cycle: Any) -> None:
        """Log one completed cycle."""
        record = {"event": "cycle", **cycle.to_dict()}
        text = (
            f"cycle {cycle.number}: {cycle.result}; changes found {cycle.found}, corrected "
            f"{cycle.corrected}; {cycle.requests} requests; {cycle.duration:.2f}s"
        )
        if cycle.message:
            text += f" — {shown(cycle.message)}"
        for error in cycle.errors:
            where = f"{error.get('file')}:{error.get('line')}"
            text += f"\n  {shown(where)}: {shown(error.get('path'))}: {shown(error.get('message'))}"
        self._emit(record, text)
