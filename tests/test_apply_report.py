"""What apply shows for each way a run can end (``apply.report``): the lines for people on
stdout, the errors on stderr, and the one ``apply -o json`` document, all from one result."""

from __future__ import annotations

import signal

import pytest

from reconciler.apply.report import report
from reconciler.apply.run import ApplyResult, ApplyStatus
from reconciler.plan.actions import Plan

EMPTY = Plan(actions=())


@pytest.mark.parametrize(
    ("result", "stdout", "stderr", "code"),
    [
        (
            ApplyResult(ApplyStatus.STALE, EMPTY, stale={"Pipe/a": "Pipe/a: changed since"}),
            [],
            ["Error: Pipe/a: changed since", "Nothing applied: 1 action(s) are stale."],
            1,
        ),
        (ApplyResult(ApplyStatus.NOTHING_TO_APPLY, EMPTY), ["Nothing to apply."], [], 0),
        (
            ApplyResult(ApplyStatus.CANCELLED, EMPTY),
            ["Apply cancelled; nothing was sent."],
            [],
            1,
        ),
        (
            ApplyResult(ApplyStatus.ALREADY_APPLIED, EMPTY, applied={"Pipe/a": "Pipe/a: done"}),
            ["Pipe/a: done\nThis saved plan was already applied: nothing sent."],
            [],
            0,
        ),
        (
            ApplyResult(ApplyStatus.APPLIED, EMPTY),
            ["Apply complete: 0 applied, 0 failed."],
            [],
            0,
        ),
        (
            ApplyResult(ApplyStatus.APPLIED, EMPTY, interrupted=signal.SIGTERM),
            ["Apply interrupted by SIGTERM: 0 applied, 0 failed.\nState is saved."],
            [],
            143,
        ),
    ],
    ids=["stale", "nothing", "cancelled", "already-applied", "applied", "interrupted"],
)
def test_each_ending_is_reported_on_its_stream_and_in_the_document(
    result: ApplyResult, stdout: list[str], stderr: list[str], code: int
) -> None:
    shown = report(result)
    assert len(shown.stdout) == len(stdout)
    for line, start in zip(shown.stdout, stdout, strict=True):
        assert line.startswith(start), line
    assert len(shown.stderr) == len(stderr)
    for line, start in zip(shown.stderr, stderr, strict=True):
        assert line.startswith(start), line
    assert shown.exit_code == code == shown.document["exitCode"]
    said = [*shown.stderr, *shown.stdout]
    for note in shown.document["notes"]:  # type: ignore[union-attr]
        assert any(str(note) in line for line in said) or result.interrupted, note


def test_a_stale_plan_names_each_stale_resource_as_an_error_in_the_document() -> None:
    result = ApplyResult(ApplyStatus.STALE, EMPTY, stale={"Pipe/a": "a moved", "Pipe/b": "b went"})
    errors = report(result).document["errors"]
    assert errors == [
        {"type": "StalePlan", "resource": "Pipe/a", "message": "a moved"},
        {"type": "StalePlan", "resource": "Pipe/b", "message": "b went"},
    ]


def test_colour_is_added_only_when_asked() -> None:
    from reconciler.apply.results import ActionResult, Outcome
    from reconciler.plan.actions import Op

    done = ActionResult(key="Pipe/a", operation=Op.UPDATE, outcome=Outcome.APPLIED)
    result = ApplyResult(ApplyStatus.APPLIED, EMPTY, results=(done,))
    assert "\x1b[" not in report(result).stdout[0]
    assert report(result, color=True).stdout[0].startswith("\x1b[32mPipe/a: applied\x1b[0m")
