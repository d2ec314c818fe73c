"""Machine output on error paths: one JSON (or markdown) document on stdout, whatever failed.

A command whose ``-o/--output`` is ``json`` (or ``markdown``) promises automation exactly one
document on stdout, so the error handler in ``reconciler.cli.main`` asks this module to print
the command's own document shape (a plan, an apply result, or a bare ``{errors, exitCode}``)
with the errors that ended the run, located where they can be: manifest errors carry file,
line, column and JSON path; API errors status, requestId and resource. The output option's
callback records which command and format were asked for.
"""

from __future__ import annotations

import json
from typing import Any

import click

from reconciler.model.errors import ReconcileError
from reconciler.model.errors import error_entries as error_entries_of

__all__: list[str] = []


_asked: dict[str, str | None] = {"command": None, "format": None}
MACHINE_FORMATS = ("json", "markdown")


def remember_output(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Option callback: remember the command and the output format it was asked for."""
    _asked.update(command=ctx.info_name, format=value)
    return value


def remember_from_args(command: str | None, output: str | None) -> None:
    """Remember a format found on the raw command line (an error before options are parsed)."""
    if output in MACHINE_FORMATS and _asked["format"] is None:
        _asked.update(command=command, format=output)


def reset() -> None:
    """Forget what an earlier run asked for (in-process callers run main several times)."""
    _asked.update(command=None, format=None)


def error_entries(exc: BaseException) -> list[dict[str, Any]]:
    """Return the ``errors[]`` entries describing ``exc`` (one per manifest problem)."""
    if isinstance(exc, ReconcileError):
        return error_entries_of(exc)
    if isinstance(exc, click.ClickException):
        return [{"type": "UsageError", "message": exc.format_message()}]
    return [{"type": type(exc).__name__, "message": str(exc) or type(exc).__name__}]


def emit_error(exc: BaseException, exit_code: int) -> None:
    """Print the asked-for machine document for a run that ended with ``exc`` (if one was asked)."""
    command, output = _asked["command"], _asked["format"]
    if output not in MACHINE_FORMATS:
        return
    entries = error_entries(exc)
    if command == "plan":
        from reconciler.plan import planfile
        from reconciler.plan.actions import Plan
        from reconciler.plan.render import render_errors_markdown

        if output == "markdown":
            click.echo(render_errors_markdown(entries, exit_code), nl=False)
        else:
            click.echo(
                planfile.dumps(Plan(actions=()), errors=entries, exit_code=exit_code), nl=False
            )
        return
    if command == "apply":
        from reconciler.apply.document import results_document
        from reconciler.plan.actions import Plan

        document = results_document([], Plan(actions=()), errors=entries, exit_code=exit_code)
    elif command == "validate":
        from reconciler.load.validation import document as validate_document

        document = validate_document(entries, [], exit_code)
    else:
        document = {"formatVersion": 1, "errors": entries, "exitCode": exit_code}
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
