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
from dataclasses import fields, replace
from typing import Any

import click

from reconciler.cli.common import Connection, Seconds
from reconciler.cli.plan import ManifestOptions, plan_options

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class Duration(click.FloatRange):
    """A duration: ``30s``, ``5m``, ``1h``, ``500ms`` or a number of seconds."""

    name = "duration"

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float | int):
            return float(value)
        match = _DURATION.match(str(value))
        seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else 0.0
        if seconds <= 0:
            self.fail(f"{value!r} is not a duration such as 30s, 5m or 1h.", param, ctx)
        return seconds


class Fraction(click.FloatRange):
    """A share of the interval: ``10%`` or ``0.1``, from 0 to 100 %."""

    name = "percent"

    def __init__(self) -> None:
        super().__init__(min=0, max=1)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = str(value).strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            number = -1.0
        if not 0 <= number <= 1:
            self.fail(f"{value!r} is not a share of the interval such as 10%.", param, ctx)
        return number


@click.command("watch")
@plan_options
@click.option(
    "--interval",
    default="5m",
    show_default=True,
    type=Duration(),
    help="Time between cycles (30s, 5m, 1h).",
)
@click.option(
    "--mode",
    type=click.Choice(["detect", "correct"]),
    default="detect",
    show_default=True,
    help="detect: plan and report drift, never write; correct: apply the plan when it has changes.",
)
@click.option(
    "--jitter",
    default="10%",
    show_default=True,
    type=Fraction(),
    help="Random delay added to each interval, as a share of it.",
)
@click.option(
    "--lease",
    "lease_seconds",
    default="30s",
    show_default=True,
    type=Duration(),
    help="With a shared state: a standby takes over at most this long after the leader dies.",
)
@click.option(
    "--listen",
    default="127.0.0.1:9464",
    show_default=True,
    metavar="HOST:PORT",
    help="Address of /healthz, /readyz, /metrics, / and /api/status (port 0: any free port).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="One line per cycle, as text or JSON.",
)
@click.option(
    "--lock-timeout",
    default=10.0,
    show_default=True,
    type=Seconds(min_open=False),
    help="Seconds a correcting cycle waits for the state lock (another apply may hold it).",
)
@click.pass_context
def watch(
    ctx: click.Context,
    manifests: ManifestOptions,
    connection: Connection,
    interval: float,
    mode: str,
    jitter: float,
    lease_seconds: float,
    listen: str,
    log_format: str,
    lock_timeout: float,
) -> int:
    """Plan PATHS every --interval; in correct mode apply the drift found (one leader at a time).

    \b
    The management request budget defaults to half the key's (--rate or the project's
    rates.management): a CI apply with the same key still has room.
    """
    from reconciler.cli.common import run
    from reconciler.state.backend import Holder
    from reconciler.watch import Mode, Watcher, WatchOptions, WatchStatus, open_lease, run_watch
    from reconciler.watch.run import parse_listen

    parse_listen(listen)  # a malformed address fails before anything else
    loader = _Loader(ctx)
    first = loader(False)
    scope = first.scope
    options = WatchOptions(
        interval=interval,
        mode=Mode(mode),
        jitter=jitter,
        lease=lease_seconds,
        lock_timeout=lock_timeout,
    )
    holder = Holder.current("reconcile watch")
    lease = open_lease(scope.state, scope.workspace, holder, lease_seconds)
    backend = scope.backend()
    try:
        description = backend.description
    finally:
        backend.close()
    status = WatchStatus(mode=mode, interval=interval, state=description, workspace=scope.workspace)
    log = _Log(log_format)
    watcher = Watcher(loader, lease, options, status, on_cycle=log.cycle, notice=log.notice)
    log.notice(
        f"watch: {mode} every {interval:g}s (+{jitter:.0%} jitter) on {description}; "
        f"management budget {first.config.rate}"
    )
    run(run_watch(watcher, listen, on_listen=lambda url: log.notice(f"watch: listening on {url}")))
    log.notice("watch: stopped; lease released.")
    return 0


class _Loader:
    """Resolve the command's settings again (flag > env > env file > project file > default)."""

    def __init__(self, ctx: click.Context) -> None:
        self.ctx = ctx

    def __call__(self, reload_project: bool) -> Any:
        from reconciler.watch import Target

        self._reread_env_files()
        if reload_project:
            self._reread_project()
        values = self._values()
        manifests = ManifestOptions(**{f.name: values[f.name] for f in fields(ManifestOptions)})
        connection = Connection(**{f.name: values[f.name] for f in fields(Connection)})
        config = connection.api_config()
        if self.ctx.get_parameter_source("rate") is not click.core.ParameterSource.COMMANDLINE:
            config = replace(config, rate=_half(config.rate))
        return Target(config, manifests.scope(), manifests.plan_options())

    def _values(self) -> dict[str, Any]:
        out = dict(self.ctx.params)
        for param in self.ctx.command.params:
            name = param.name
            if name is None or name not in out:
                continue
            if self.ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE:
                continue
            # The order click itself follows: environment variable, then the project file;
            # a value from neither keeps what the command started with (its default).
            value = param.value_from_envvar(self.ctx)
            if value is None:
                value = self.ctx.lookup_default(name)
            if value is not None:
                out[name] = param.process_value(self.ctx, value)
        return out

    def _reread_env_files(self) -> None:
        import os

        from dotenv import dotenv_values

        from reconciler.cli.config import project_of

        for env_file in project_of(self.ctx).env_files:
            try:
                values = dotenv_values(env_file.path)
            except OSError:
                continue
            for name, value in values.items():
                if value is None or name in env_file.kept:
                    continue
                if name in env_file.loaded or name not in os.environ:
                    os.environ[name] = value
                    if name not in env_file.loaded:
                        env_file.loaded.append(name)

    def _reread_project(self) -> None:
        from reconciler.cli.config import _default_map, project_of
        from reconciler.load.project import load_project_file

        project = project_of(self.ctx)
        if project.file is None:
            return
        project.file = load_project_file(project.file.path)
        root = self.ctx.find_root()
        self.ctx.default_map = _default_map(root.command, project.file).get(
            self.ctx.info_name or "watch"
        )


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
        else:
            line = f"{stamp} {text}"
        click.echo(line)
        sys.stdout.flush()

    def notice(self, message: str) -> None:
        """Log a notice (start, leadership changes, stop)."""
        self._emit({"event": "notice", "message": message}, message)

    def cycle(self, cycle: Any) -> None:
        """Log one completed cycle."""
        record = {"event": "cycle", **cycle.to_dict()}
        text = (
            f"cycle {cycle.number}: {cycle.result}; changes found {cycle.found}, corrected "
            f"{cycle.corrected}; {cycle.requests} requests; {cycle.duration:.2f}s"
        )
        if cycle.message:
            text += f" — {cycle.message}"
        for error in cycle.errors:
            text += f"\n  {error.get('file')}:{error.get('line')}: {error.get('path')}: {error.get('message')}"
        self._emit(record, text)
