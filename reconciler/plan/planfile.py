"""The plan as a JSON document: what ``--output json`` prints and ``--out FILE`` saves.

The document is versioned (``formatVersion``) and redacted: a secret never appears, only the
marker ``(sensitive)`` in request bodies and the secret's HMAC fingerprint, which ``apply
--plan`` checks after resolving the secret again from the manifests. Absent values are
omitted (``old`` missing means the field was absent), so ``null`` always means JSON null.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reconciler.model.errors import Location, PlanError
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.model.secrets import REDACTED, redact
from reconciler.model.version import package_version
from reconciler.plan.actions import PLAN_FORMAT_VERSION, Action, Op, Plan, Purpose, Request
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, present
from reconciler.plan.listdiff import field_changes, list_changes

__all__ = ["action_errors", "dumps", "load"]


SENSITIVE_TEXT = "(sensitive value changed)"


def _location(loc: Location) -> dict[str, JsonLike]:
    return {"file": loc.file, "line": loc.line, "col": loc.col}


def change_to_json(change: FieldChange) -> dict[str, JsonLike]:
    """Serialise one field change (secrets redacted, absent values omitted)."""
    out: dict[str, JsonLike] = {
        "path": change.dotted,
        "pathParts": list(change.path),
        "kind": change.kind.value,
        "location": _location(change.location),
    }
    if change.kind is ChangeKind.SENSITIVE:
        out["new"] = SENSITIVE_TEXT
        return out
    if present(change.old):
        out["old"] = redact(change.old)
    if present(change.new):
        out["new"] = redact(change.new)
    elements = _elements(change)
    if elements:
        out["elements"] = elements
    return out


def _elements(change: FieldChange) -> list[dict[str, JsonLike]]:
    """The element changes of a list change (or the changed fields of a re-added item)."""
    if change.kind is ChangeKind.SET:
        found = list_changes(change.path, change.old, change.new) or ()
    elif change.kind is ChangeKind.ADD and change.old is not MISSING:
        found = tuple(
            dataclasses.replace(c, element=str(change.path[-1]))
            for c in field_changes(change.old, change.new)
        )
    else:
        return []
    out: list[dict[str, JsonLike]] = []
    for element in found:
        entry: dict[str, JsonLike] = {"change": element.op.value, "element": element.element}
        if element.path:
            entry["path"] = element.path
        if present(element.old):
            entry["old"] = redact(element.old)
        if present(element.new):
            entry["new"] = redact(element.new)
        out.append(entry)
    return out


# The request's fields in the order the document lists them (``body`` last, redacted).
_REQUEST_FIELDS = ("method", "path", "interface", "idempotent", "purpose")


def request_to_json(request: Request) -> dict[str, JsonLike]:
    """Serialise one request (secrets in the body replaced by a marker)."""
    out: dict[str, JsonLike] = {name: getattr(request, name) for name in _REQUEST_FIELDS}
    out["body"] = redact(request.body) if request.body is not None else None
    return out


def action_to_json(action: Action) -> dict[str, JsonLike]:
    """Serialise one action."""
    return {
        "resource": action.key,
        "kind": action.kind,
        "name": action.name,
        "operation": action.operation,
        "location": _location(action.location),
        "target": dict(action.target),
        "changes": [change_to_json(c) for c in action.changes],
        "requests": [request_to_json(r) for r in action.requests],
        "errors": list(action.errors),
        "warnings": list(action.warnings),
        "basis": action.basis,
        "basisHash": action.basis_hash,
        "secrets": dict(action.secrets),
        "contentHash": action.content_hash,
        "renamedFrom": action.renamed_from,
        # Only for bound kinds (pipes, dashboards) planned with an identity.
        **({"bound": action.bound} if action.bound else {}),
        **({"madeByUs": True} if action.made_by_us else {}),
        # Only when there is something to forget: plans of thousands of pipes stay as they were.
        **({"forgetSecrets": list(action.forget_secrets)} if action.forget_secrets else {}),
    }


def action_errors(plan: Plan) -> list[dict[str, JsonLike]]:
    """Return each action's errors as ``errors[]`` entries naming resource and manifest place."""
    return [
        {
            "type": "PlanError",
            "resource": action.key,
            "message": message,
            "file": action.location.file,
            "line": action.location.line,
            "col": action.location.col,
        }
        for action in plan.actions
        for message in action.errors
    ]


def plan_to_json(
    plan: Plan,
    *,
    errors: Sequence[JsonMapping] = (),
    exit_code: int | None = None,
) -> dict[str, JsonLike]:
    """Return the versioned, redacted JSON document of a plan.

    ``errors`` lists what ended the run (manifest, connection, lock errors) before the actions'
    own errors; ``exitCode`` mirrors the command's exit status (default: 1 on errors, else 0).
    """
    entries = [*map(dict, errors), *action_errors(plan)]
    return {
        "formatVersion": PLAN_FORMAT_VERSION,
        "exitCode": exit_code if exit_code is not None else (1 if entries else 0),
        "errors": entries,
        "reconcileVersion": package_version(),
        "createdAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "manifestPaths": list(plan.manifest_paths),
        "summary": plan.summary(),
        "requestsMade": dict(plan.requests_made),
        "notes": list(plan.notes),
        "dashboardsListable": plan.dashboards_listable,
        "actions": [action_to_json(a) for a in plan.actions],
        **({"environment": plan.environment} if plan.environment else {}),
    }


def dumps(plan: Plan, *, errors: Sequence[JsonMapping] = (), exit_code: int | None = None) -> str:
    """Return the plan document as indented JSON text."""
    document = plan_to_json(plan, errors=errors, exit_code=exit_code)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# -- reading a saved plan ---------------------------------------------------------------------


def _load_location(raw: Any) -> Location:
    if isinstance(raw, Mapping):
        return Location(str(raw.get("file", "")), int(raw.get("line", 0)), int(raw.get("col", 0)))
    return Location(str(raw or ""))


def _load_change(raw: Mapping[str, Any]) -> FieldChange:
    kind = ChangeKind(str(raw["kind"]))
    return FieldChange(
        path=tuple(raw.get("pathParts") or []),
        old=raw.get("old", MISSING),
        new=REDACTED if kind is ChangeKind.SENSITIVE else raw.get("new", MISSING),
        kind=kind,
        location=_load_location(raw.get("location")),
    )


def _load_action(raw: Mapping[str, Any]) -> Action:
    return Action(
        kind=str(raw["kind"]),
        name=str(raw["name"]),
        operation=Op(str(raw["operation"])),
        location=_load_location(raw.get("location")),
        changes=tuple(_load_change(c) for c in raw.get("changes", [])),
        requests=tuple(
            Request(
                method=str(r["method"]),
                path=str(r["path"]),
                body=r.get("body"),
                interface=str(r.get("interface", "management")),
                idempotent=bool(r.get("idempotent", True)),
                purpose=Purpose(str(r.get("purpose", "update"))),
            )
            for r in raw.get("requests", [])
        ),
        errors=tuple(str(e) for e in raw.get("errors", [])),
        warnings=tuple(str(w) for w in raw.get("warnings", [])),
        target={str(k): str(v) for k, v in (raw.get("target") or {}).items()},
        basis=raw.get("basis"),
        basis_hash=raw.get("basisHash"),
        secrets={str(k): str(v) for k, v in (raw.get("secrets") or {}).items()},
        content_hash=raw.get("contentHash"),
        renamed_from=raw.get("renamedFrom"),
        forget_secrets=tuple(str(name) for name in raw.get("forgetSecrets") or ()),
        bound=str(raw["bound"]) if raw.get("bound") else None,
        made_by_us=raw.get("madeByUs") is True,
    )


def load(path: Path) -> Plan:
    """Read a plan saved with ``--out``; refuse other formats with a clear error."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PlanError(f"cannot read plan file {path}: {exc}") from None
    if not isinstance(raw, dict) or "actions" not in raw:
        raise PlanError(f"{path} is not a reconcile plan file")
    version = raw.get("formatVersion")
    if version != PLAN_FORMAT_VERSION:
        raise PlanError(
            f"plan file {path} has format {version}; this reconcile reads format {PLAN_FORMAT_VERSION}"
        )
    try:
        actions = tuple(_load_action(a) for a in raw["actions"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"plan file {path} is corrupt: {exc}") from None
    return Plan(
        actions=actions,
        requests_made={str(k): int(v) for k, v in (raw.get("requestsMade") or {}).items()},
        manifest_paths=tuple(str(p) for p in raw.get("manifestPaths", [])),
        notes=tuple(str(n) for n in raw.get("notes", [])),
        dashboards_listable=raw.get("dashboardsListable")
        if isinstance(raw.get("dashboardsListable"), bool)
        else None,
        environment=str(raw["environment"]) if raw.get("environment") else None,
    )
