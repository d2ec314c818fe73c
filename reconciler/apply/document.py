"""The ``apply -o json`` document (``schemas/apply-result.schema.json``), on success and on errors.

One builder for every path that reports an apply to automation: the results of a run, a stale
or cancelled one, and an error that ended it before anything was sent (the CLI's error handler
passes no results and the errors).
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.apply.results import ActionResult
from reconciler.apply.run import count_outcomes
from reconciler.model.json import JsonLike, JsonMapping
from reconciler.plan.actions import Plan
from reconciler.plan.planfile import action_errors

__all__ = ["results_document"]


def results_document(
    results: Sequence[ActionResult],
    plan: Plan,
    *,
    errors: Sequence[JsonMapping] = (),
    exit_code: int | None = None,
    notes: Sequence[str] = (),
) -> dict[str, JsonLike]:
    """Return the ``apply -o json`` document (schemas/apply-result.schema.json)."""
    entries = [*map(dict, errors), *action_errors(plan)]
    planned_errors = {a.key for a in plan.failed}
    entries += [
        {"type": "ApplyFailure", "resource": r.key, "outcome": str(r.outcome), "message": m}
        for r in results
        if r.failed and r.key not in planned_errors
        for m in (r.messages or (str(r.outcome),))
    ]
    return {
        "formatVersion": 1,
        "exitCode": exit_code if exit_code is not None else (1 if entries else 0),
        "errors": entries,
        "notes": list(notes),
        "summary": count_outcomes(results),
        "planErrors": [{"resource": a.key, "errors": list(a.errors)} for a in plan.failed],
        "results": [
            {
                "resource": r.key,
                "operation": r.operation,
                "outcome": r.outcome,
                "messages": list(r.messages),
                "requests": [
                    {
                        "method": q.method,
                        "path": q.path,
                        "purpose": q.purpose,
                        "status": q.status,
                        "requestId": q.request_id,
                        "outcome": q.outcome,
                        "error": q.error,
                    }
                    for q in r.requests
                ],
            }
            for r in results
        ],
    }
