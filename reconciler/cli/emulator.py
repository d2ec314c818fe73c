"""``reconcile emulator``: serve the local API emulator on loopback.

Starlette and uvicorn are imported inside the command so that other commands start fast.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click

__all__: list[str] = []


def _rate_limit(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from reconciler.emulator.faults import parse_rate_limit

    try:
        parse_rate_limit(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def _data_file(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    # A trailing separator means the user thought of a directory: saying so beats silently
    # writing a file of that name.
    if value is None:
        return None
    if value.endswith((os.sep, "/")):
        raise click.BadParameter(
            f"{value} names a directory; give a file in it, e.g. {value}emulator.json"
        )
    return Path(value)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port; 0 picks a free one.",
)
@click.option("--spec-only", is_flag=True, help="Serve only the spec's endpoints (no extensions).")
@click.option(
    "--latency-ms", default=0, type=click.IntRange(min=0), help="Delay every API request."
)
@click.option(
    "--fault-rate",
    default=0.0,
    type=click.FloatRange(0, 1),
    help="Probability of a 503, 502 or dropped connection per API request.",
)
@click.option("--fault-seed", default=0, type=int, help="Seed of the fault generator.")
@click.option(
    "--rate-limit",
    callback=_rate_limit,
    metavar="N/SECONDS",
    help="Management requests admitted per key in any sliding window (e.g. 10/10).",
)
@click.option(
    "--data",
    "data_file",
    type=click.Path(dir_okay=False),
    callback=_data_file,
    help="Load the store from FILE if it exists, and save every change to it "
    "(its directory is created if missing).",
)
@click.option(
    "--transition-ms",
    default=300,
    show_default=True,
    type=click.IntRange(min=0),
    help="How long a pipe stays Provisioning, Stopping, Pausing or Resync after a create "
    "or a state command, and a new reverse private endpoint Provisioning.",
)
@click.option("--seed-pipes", default=0, type=click.IntRange(min=0), help="Add N scale-seed pipes.")
@click.option(
    "--services", default=3, type=click.IntRange(min=1), help="Services for the scale seed."
)
@click.option(
    "--print-env",
    is_flag=True,
    help="Print only the export lines on stdout (start-up lines go to stderr), for `. FILE`.",
)
def emulator(
    host: str,
    port: int,
    spec_only: bool,
    latency_ms: int,
    fault_rate: float,
    fault_seed: int,
    rate_limit: str | None,
    data_file: Path | None,
    transition_ms: int,
    seed_pipes: int,
    services: int,
    print_env: bool,
) -> None:
    """Serve the management and dashboards APIs locally, seeded with a demo organization.

    Credentials come from RECONCILE_KEY_ID / RECONCILE_KEY_SECRET (Basic) and
    RECONCILE_DASHBOARDS_TOKEN (Bearer), with demo defaults when unset. After the two
    start-up lines come ready-to-paste `export` lines; a secret read from the environment
    is never printed (its variable's name stands in its place).
    """
    from reconciler.emulator.faults import EmulatorConfig, parse_rate_limit
    from reconciler.emulator.pipeline import create_app
    from reconciler.emulator.server import serve

    config = EmulatorConfig(
        spec_only=spec_only,
        latency_ms=latency_ms,
        fault_rate=fault_rate,
        fault_seed=fault_seed,
        rate_limit=None if rate_limit is None else parse_rate_limit(rate_limit),
        transition_ms=transition_ms,
    )
    if data_file is not None:
        try:
            data_file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # mkdir says "File exists" when a file stands where a directory must be: name it.
            blocking = next((p for p in data_file.parents if p.exists() and not p.is_dir()), None)
            why = f"{blocking} is a file, not a directory" if blocking else exc.strerror
            raise click.ClickException(
                f"cannot create the directory of --data {data_file}: {why}"
            ) from None
    try:
        app = create_app(
            config=config, seed_pipes=seed_pipes, services=services, data_file=data_file
        )
    except OSError as exc:
        # The store is saved through a temporary file: name the user's file, not that one.
        verb = "load" if data_file is not None and data_file.exists() else "write"
        raise click.ClickException(f"cannot {verb} {data_file}: {exc.strerror}") from None
    except ValueError as exc:
        raise click.ClickException(f"cannot load {data_file}: {exc}") from None
    # A server stops on SIGTERM as its server library does (a graceful shutdown, then the
    # signal's default action), not as a command interrupted before it sent anything.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        serve(app, host, port, print_env=print_env)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from None
