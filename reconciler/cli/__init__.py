"""The ``reconcile`` command line.

Only click lives here and in ``reconciler.cli.commands``: each command parses its options, calls
one core function, renders the result and returns an exit code. Errors are mapped to exit
codes in one place (``main``): every ``ReconcileError`` prints its message on stderr and exits
1; ``--debug`` adds the traceback. Heavy modules are imported inside commands so that
``reconcile validate`` starts fast.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

__all__ = ["SETTINGS_OPTIONS", "LazyCommands", "ReconcileError", "main"]


# httpx imports its own command line (``httpx._main``) when it can, and with it rich and
# pygments: about 50 ms of start-up for a module this program never calls. Marking it absent
# makes httpx take its documented fallback (``httpx.main`` then explains how to get the CLI).
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import click

from reconciler.cli.commands import SETTINGS_OPTIONS, LazyCommands
from reconciler.model.errors import ReconcileError


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    # The version is read from package metadata only when asked (it costs ~30 ms of imports).
    if not value or ctx.resilient_parsing:
        return
    from reconciler.model.version import package_version

    click.echo(f"reconcile, version {package_version()}")
    ctx.exit()


class ReconcileGroup(LazyCommands):
    """The root group: keeps its raw arguments so ``--config``/``--env-file`` are found anywhere."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Remember the whole command line for the configuration layer, then parse as usual."""
        ctx.meta["reconcile.args"] = list(args)
        return super().parse_args(ctx, args)


@click.group(
    cls=ReconcileGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@SETTINGS_OPTIONS
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Keep pipes, organization settings and dashboards equal to YAML manifests.

    Settings are resolved flag > environment variable > project file > default;
    with `environments:` in the project file, flag > the environment's own value >
    environment variable > project file > default. The project file is
    reconcile.yaml, found from the current directory upwards; `reconcile config`
    shows each value and where it came from.

    \b
    Exit codes: 0 success / no changes, 1 error,
    2 a finding: plan --detailed-exitcode with changes, or check backups stale,
    130 / 143 apply interrupted by SIGINT / SIGTERM (state saved; run it again).
    """
    from reconciler.cli.config import prepare

    prepare(ctx, ctx.meta.get("reconcile.args", []), ctx.invoked_subcommand)


def debug_first(args: list[str]) -> tuple[list[str], bool]:
    """Move ``--debug`` to the front wherever it was given (before or after the subcommand)."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:end]:
        return list(args), False
    rest = [a for a in args[:end] if a != "--debug"] + list(args[end:])
    return ["--debug", *rest], True


def _sigterm_as_interrupt(received: list[signal.Signals]) -> Callable[[], None]:
    """Make SIGTERM end the run the way Ctrl-C does; return what undoes it.

    The handler records SIGTERM, then does what SIGINT's handler would: asyncio's own (cancel
    the running command cleanly, then ``KeyboardInterrupt``) or Python's (raise it at once).
    Apply's sending phase installs its own handlers for both signals and restores these after.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigterm(_signum: int, frame: FrameType | None) -> None:
        received.append(signal.SIGTERM)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # SIGINT ignored (a background job): interrupt all the same
            handler = signal.default_int_handler
        handler(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and map errors to exit codes (the only place that does).

    Every error ends as ``Error: …`` on stderr and, when the command was asked for ``-o json``
    or ``-o markdown``, one document on stdout carrying ``errors[]`` and the exit code. No user
    error shows a traceback unless ``--debug`` is given (before or after the subcommand).
    """
    from reconciler.cli import machine

    args, debug = debug_first(sys.argv[1:] if argv is None else argv)
    machine.reset()

    def fail(exc: BaseException, message: str, code: int) -> None:
        from reconciler.model.text import shown

        if debug:
            import traceback

            traceback.print_exception(exc)
        # One line per line of ours; what a line quotes (a server's words) cannot start another.
        click.echo("Error: " + "\n".join(map(shown, message.split("\n"))), err=True)
        machine.emit_error(exc, code)
        sys.exit(code)

    def interrupted(exc: BaseException | None) -> None:
        # SIGINT or SIGTERM outside apply's sending phase (which reports its own interruption);
        # apply raises it again saying when (``before anything was sent``).
        from reconciler.model.errors import Interrupted

        sig = received[0] if received else signal.SIGINT
        when = exc.args[0] if exc is not None and exc.args and isinstance(exc.args[0], str) else ""
        message = f"Interrupted by {sig.name}{' ' + when if when else ''}."
        click.echo(message, err=True)
        machine.emit_error(Interrupted(sig.name, message), 128 + sig)
        sys.exit(128 + sig)

    received: list[signal.Signals] = []
    restore = _sigterm_as_interrupt(received)
    try:
        rv = cli.main(args=args, prog_name="reconcile", standalone_mode=False)
    except ReconcileError as exc:
        fail(exc, str(exc), exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns a KeyboardInterrupt into Abort (also at a prompt, where EOF is one too).
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            interrupted(cause)
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        # No option reads a variable (the settings resolve those): a bad value click reports
        # was typed on the command line, and its flag names it.
        exc.show()
        machine.emit_error(exc, 1 if exc.exit_code == 2 else exc.exit_code)
        sys.exit(1 if exc.exit_code == 2 else exc.exit_code)
    except KeyboardInterrupt as exc:
        interrupted(exc)
    except OSError as exc:
        # A file the user named could not be read or written: say which, without a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        fail(exc, f"{exc.strerror or exc}{where}", 1)
    except Exception as exc:  # the last line of defence: no traceback unless --debug
        fail(
            exc, f"internal error ({type(exc).__name__}: {exc}); rerun with --debug for details", 1
        )
    finally:
        restore()
    sys.exit(rv if isinstance(rv, int) else 0)
