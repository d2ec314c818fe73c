"""Renderers: plans as text (for terminals), markdown (for pull-request comments) and JSON (for
machines, see ``planfile``); apply results are rendered beside the apply (``apply.report``),
with the colours of ``ansi``.

Renderers only turn data into strings; commands decide where they go. Colour is applied only
when the caller asks for it (a TTY without ``NO_COLOR``). Secrets never reach a renderer in
clear: sensitive changes carry the ``(sensitive value changed)`` text and bodies are redacted.
A changed list is shown element by element (``listdiff``): the tile, mapping or column that
changed, with its changed fields, in full; a long value is never cut before its difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reconciler.model.secrets import redact
from reconciler.model.text import shown as printable
from reconciler.plan.actions import Action, Op, Plan, Request
from reconciler.plan.changetext import (
    ElementLine,
    describe_change,
    element_text,
    expand_change,
    full_text,
    readded_paths,
    reset_text,
    value_pair,
    value_text,
)
from reconciler.plan.diff import MISSING, ChangeKind

__all__ = [
    "ansi",
    "describe_change",
    "render_errors_markdown",
    "render_markdown",
    "render_text",
    "table",
]


SYMBOL = {
    Op.CREATE: "+",
    Op.UPDATE: "~",
    Op.REPLACE: "±",
    Op.DELETE: "-",
    Op.NOOP: "=",
    Op.ERROR: "!",
}
COLOUR = {
    Op.CREATE: "green",
    Op.UPDATE: "yellow",
    Op.REPLACE: "magenta",
    Op.DELETE: "red",
    Op.NOOP: "white",
    Op.ERROR: "red",
}
MARKDOWN_LIMIT = 60_000
# ANSI SGR codes of the colours and weights used here (the codes a terminal library emits).
_SGR = {
    "red": 31,
    "green": 32,
    "yellow": 33,
    "magenta": 35,
    "cyan": 36,
    "white": 37,
}
_RESET = "\x1b[0m"


def ansi(text: str, *, fg: str | None = None, bold: bool = False, dim: bool = False) -> str:
    """Return ``text`` in a colour and weight for a terminal (ANSI escape codes)."""
    codes = ([_SGR[fg]] if fg else []) + ([1] if bold else []) + ([2] if dim else [])
    return "".join(f"\x1b[{code}m" for code in codes) + text + _RESET


def purpose_text(request: Request) -> str:
    """Say why a request is sent (a state command names its command: ``state command: stop``)."""
    body = request.body
    if request.purpose.is_state_command and isinstance(body, Mapping) and "command" in body:
        return f"{request.purpose}: {body['command']}"
    return str(request.purpose)


def summary_line(plan: Plan) -> str:
    """Return the one-line plan summary, Terraform-like."""
    s = plan.summary()
    # Named only when there is one, so the line of every other plan keeps its shape.
    rename = f"{s['rename']} to rename, " if s["rename"] else ""
    return (
        f"Plan: {s['create']} to create, {s['update']} to update, {s['replace']} to replace, "
        f"{s['delete']} to delete, {rename}{s['unchanged']} unchanged ({s['warnings']} with "
        f"warnings), {s['errors']} with errors."
    )


def requests_line(plan: Plan) -> str:
    """Return how many requests computing the plan took."""
    made = plan.requests_made
    total = sum(made.values())
    parts = ", ".join(f"{k} {v}" for k, v in made.items() if v)
    return f"Requests made: {total}" + (f" ({parts})" if parts else "") + "."


# How a kind is named in a plan's text (default: its name in lower case), the target keys that
# hold a live id, and what a kind is adopted by when it is not its name.
_NOUNS = {"ReversePrivateEndpoint": "reverse private endpoint", "CdcScaling": "CDC scaling"}
_ID_KEYS = ("pipeId", "reversePrivateEndpointId", "id")
_ADOPTED_BY = {"ReversePrivateEndpoint": "description"}


def _noun(action: Action) -> str:
    return _NOUNS.get(action.kind, action.kind.lower())


def _live_id(action: Action) -> str:
    return next((action.target[k] for k in _ID_KEYS if action.target.get(k)), "")


def _label(action: Action) -> str:
    return f"{_noun(action)} {action.name}"


def render_text(
    plan: Plan, *, color: bool = False, show_unchanged: bool = False, show_requests: bool = True
) -> str:
    """Render a plan for a terminal."""

    def style(text: str, **kw: Any) -> str:
        return ansi(text, **kw) if color else text

    lines: list[str] = []
    for note in plan.notes:
        lines.append(style(f"note: {printable(note)}", fg="cyan"))
    if plan.notes:
        lines.append("")
    for action in plan.actions:
        shown = (
            action.has_changes
            or action.errors
            or action.warnings
            or action.changes
            or action.renamed_from
            or show_unchanged
        )
        if not shown:
            continue
        sign = SYMBOL.get(action.operation, "?")
        colour = COLOUR.get(action.operation, "white")
        head = f"{sign} {_label(action)}"
        if action.renamed_from:
            head += (
                f" (renamed from {action.kind}/{action.renamed_from}; "
                f"same live {_noun(action)} {_live_id(action)})"
            )
        elif action.bound == "adopted":
            by = _ADOPTED_BY.get(action.kind, "name")
            head += f" (adopted by {by}: {_noun(action)} {_live_id(action)})"
        if action.operation is Op.CREATE and not action.errors:
            head += " (create)"
        elif action.operation is Op.REPLACE:
            head += " (-/+ replace)"
        head = printable(head)  # names and ids may come from manifests and servers
        lines.append(style(head, fg=colour, bold=True) + style(f"  ({action.location})", dim=True))
        creating = action.operation in (Op.CREATE, Op.REPLACE)
        readded = readded_paths(action)
        for change in action.changes:
            expanded = expand_change(change, readded)
            csign, text = (
                describe_change(change, creating=creating) if expanded is None else expanded[0]
            )
            if not text:
                continue
            lines.append(
                f"    {style(csign, fg=_change_colour(csign))} {printable(text)}"
                + style(f"  ({change.location})", dim=True)
            )
            for element in expanded[1] if expanded else []:
                shown_line = element_text(element)
                lines.append(
                    f"        {style(shown_line[0], fg=_change_colour(shown_line[0]))}"
                    + printable(shown_line[1:])
                )
        if show_requests:
            for request in action.requests:
                lines.append(
                    style(f"    → {request.method} {request.path}", fg="cyan")
                    + style(f"  [{purpose_text(request)}]", dim=True)
                )
        for warning in action.warnings:
            lines.append(style(f"    warning: {printable(warning)}", fg="yellow"))
        for error in action.errors:
            lines.append(style(f"    error: {printable(error)}", fg="red"))
        lines.append("")
    if not plan.changed and not plan.failed:
        lines.append(style("No changes. The live state matches the manifests.", fg="green"))
    lines.append(style(summary_line(plan), bold=True))
    lines.append(requests_line(plan))
    return "\n".join(lines) + "\n"


def _change_colour(sign: str) -> str:
    colours = {"+": "green", "-": "red", "~": "yellow", "!": "red", "-/+": "magenta", "…": "cyan"}
    return colours.get(sign, "white")


# -- markdown -----------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(plan: Plan, *, limit: int = MARKDOWN_LIMIT) -> str:
    """Render a plan for a pull-request comment: summary table first, details collapsed."""
    head = ["### reconcile plan", "", f"**{summary_line(plan)}** {requests_line(plan)}", ""]
    for note in plan.notes:
        head.append(f"> note: {note}")
    rows = [
        a
        for a in plan.actions
        if a.has_changes or a.errors or a.warnings or a.changes or a.renamed_from
    ]
    if rows:
        head += ["| | Resource | Operation | Changes | Manifest |", "|---|---|---|---:|---|"]
        # The table itself must fit too (2,000 rows would not): give it half the limit.
        table_budget = limit // 2
        for shown, action in enumerate(rows):
            op = "error" if action.errors else str(action.operation)
            if action.renames_only:
                op = f"rename (from `{action.renamed_from}`)"
            elif action.renamed_from:
                op += f" (renamed from `{action.renamed_from}`)"
            row = (
                f"| {SYMBOL.get(action.operation, '?')} | `{action.key}` | {op} | {len(action.changes)} | "
                f"`{action.location.file}:{action.location.line}` |"
            )
            table_budget -= len(row) + 1
            if table_budget < 0:
                head += [
                    "",
                    f"_{len(rows) - shown} more resources not listed to stay under {limit:,} characters; "
                    "see `reconcile plan --output json`._",
                ]
                break
            head.append(row)
        head.append("")
    else:
        head.append("No changes. The live state matches the manifests.")
    text = "\n".join(head) + "\n"
    for with_bodies in (True, False):
        details = [_md_details(a, with_bodies) for a in rows]
        body = "\n".join(details)
        note = (
            ""
            if with_bodies
            else "\n_Request bodies elided to fit the comment; see `reconcile plan --output json`._\n"
        )
        if len(text) + 1 + len(body) + len(note) <= limit:
            return text + "\n" + body + note
    # Still too long: keep as many actions' details as fit, then say how many were left out.
    out = text + "\n"
    kept = 0
    for action in rows:
        piece = _md_details(action, False) + "\n"
        if len(out) + len(piece) > limit - 200:
            break
        out += piece
        kept += 1
    out += f"\n_Details of {len(rows) - kept} more resources elided to stay under {limit:,} characters; see `reconcile plan --output json`._\n"
    return out


def render_errors_markdown(errors: Iterable[Mapping[str, object]], exit_code: int) -> str:
    """Render the errors that stopped a plan (bad manifests, connection, lock) as markdown."""
    lines = [
        "### reconcile plan",
        "",
        f"**The plan could not be computed (exit {exit_code}).** Nothing was sent.",
        "",
        "| | Where | Field | Error |",
        "|---|---|---|---|",
    ]
    for error in errors:
        where = ""
        if error.get("file"):
            where = f"`{error['file']}:{error.get('line', 0)}:{error.get('col', 0)}`"
        elif error.get("resource"):
            where = f"`{error['resource']}`"
        field = f"`{_md_escape(str(error['path']))}`" if error.get("path") else ""
        lines.append(f"| ❌ | {where} | {field} | {_md_escape(str(error.get('message', '')))} |")
    return "\n".join(lines) + "\n"


def _md_details(action: Action, with_bodies: bool) -> str:
    sign = SYMBOL.get(action.operation, "?")
    parts = [
        f"<details><summary>{sign} <code>{action.key}</code> — {len(action.changes)} change(s)</summary>",
        "",
    ]
    creating = action.operation in (Op.CREATE, Op.REPLACE)
    if action.changes:
        parts += ["| | Field | Old | New | Manifest |", "|---|---|---|---|---|"]
        readded = readded_paths(action)
        for change in action.changes:
            where = f"`{change.location.file}:{change.location.line}`"
            expanded = expand_change(change, readded)
            if expanded is not None:
                (sign, text), elements = expanded
                if not text:
                    continue
                summary = text.partition(": ")[2]
                parts.append(
                    f"| {sign} | `{_md_escape(change.dotted)}` | | {_md_escape(summary)} | {where} |"
                )
                parts += [_md_element(line) for line in elements]
                continue
            old = (
                ""
                if change.old is MISSING or change.kind is ChangeKind.SENSITIVE
                else value_text(change.old, 60)
            )
            new = (
                ("(sensitive value)" if creating else "(sensitive value changed)")
                if change.kind is ChangeKind.SENSITIVE
                else reset_text(change.new)
                if change.kind is ChangeKind.RESET
                else ("" if change.new is MISSING else value_text(change.new, 60))
            )
            if (
                change.kind in (ChangeKind.SET, ChangeKind.EXPECTATION)
                and change.old is not MISSING
            ):
                old, new = value_pair(change.old, change.new, 60)
            elif change.kind in (ChangeKind.ADD, ChangeKind.REMOVE):
                old = "" if change.old is MISSING else full_text(change.old)
                new = "" if change.new is MISSING else full_text(change.new)
            parts.append(
                f"| {describe_change(change, creating=creating)[0]} | `{_md_escape(change.dotted)}` | {_md_escape(old)} | {_md_escape(new)} | "
                f"{where} |"
            )
        parts.append("")
    for request in action.requests:
        parts.append(f"`{request.method} {request.path}` ({purpose_text(request)})")
        if with_bodies and request.body is not None:
            parts += [
                "```json",
                json.dumps(redact(request.body), indent=2, ensure_ascii=False),
                "```",
            ]
        elif request.body is not None:
            size = len(json.dumps(redact(request.body)))
            parts.append(f"_(body elided: {size:,} bytes)_")
        parts.append("")
    for warning in action.warnings:
        parts.append(f"> ⚠️ {_md_escape(warning)}")
    for error in action.errors:
        parts.append(f"> ❌ {_md_escape(error)}")
    parts += ["", "</details>", ""]
    return "\n".join(parts)


def _md_element(line: ElementLine) -> str:
    sign, at, old, new = line
    if old is MISSING or new is MISSING:
        shown_old = "" if old is MISSING else full_text(old)
        shown_new = "" if new is MISSING else full_text(new)
    else:
        shown_old, shown_new = value_pair(old, new, 60)
    return f"| {sign} | `{_md_escape(at)}` | {_md_escape(shown_old)} | {_md_escape(shown_new)} | |"


def table(
    rows: Iterable[Iterable[object]], headers: Iterable[str], fmt: Callable[[object], str] = str
) -> str:
    """Render aligned columns (shared by the read-only commands); cells shown escaped."""
    head = [str(h) for h in headers]
    body = [[printable(fmt(c)) for c in row] for row in rows]  # live names come from servers
    widths = [len(h) for h in head]
    for row in body:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(head)).rstrip()]
    for row in body:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines) + "\n"
