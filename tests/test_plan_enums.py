"""Operations, outcomes and request purposes are ``StrEnum``s: their JSON spelling is unchanged,
a saved plan reads back as members (apply keys on them, never on text), and an unknown value
makes the plan file corrupt rather than silently accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.apply.results import Outcome
from reconciler.model.errors import Location, PlanError
from reconciler.plan.actions import Action, Op, Plan, Purpose, Request
from reconciler.plan.planfile import dumps, load

WHERE = Location("organization.yaml", 6, 3)


def _plan() -> Plan:
    requests = (
        Request("PATCH", "/v1/organizations/o", {"name": "n"}, purpose=Purpose.READ_ORGANIZATION),
        Request(
            "PATCH",
            "/v1/organizations/o",
            None,
            idempotent=False,
            purpose=Purpose.DEFERRED_ENDPOINTS,
        ),
    )
    return Plan((Action("Organization", "acme", Op.UPDATE, WHERE, requests=requests),))


def test_enumerations_keep_their_json_spelling() -> None:
    assert [o.value for o in Op] == ["create", "update", "replace", "delete", "noop", "error"]
    assert Outcome.NOT_CONVERGED == "not-converged"
    document = json.loads(dumps(_plan()))
    action = document["actions"][0]
    assert action["operation"] == "update"
    assert [r["purpose"] for r in action["requests"]] == [
        "update name and read the organization",
        "private endpoints, computed at apply time from the answer above",
    ]


def test_a_saved_plan_reads_back_as_members(tmp_path: Path) -> None:
    saved = tmp_path / "plan.json"
    saved.write_text(dumps(_plan()), encoding="utf-8")
    action = load(saved).actions[0]
    assert action.operation is Op.UPDATE
    assert [r.purpose for r in action.requests] == [
        Purpose.READ_ORGANIZATION,
        Purpose.DEFERRED_ENDPOINTS,
    ]
    assert [r.purpose.body_from_answer for r in action.requests] == [False, True]


@pytest.mark.parametrize(("field", "value"), [("operation", "upsert"), ("purpose", "whatever")])
def test_an_unknown_enumeration_value_makes_the_plan_file_corrupt(
    tmp_path: Path, field: str, value: str
) -> None:
    document = json.loads(dumps(_plan()))
    target = (
        document["actions"][0] if field == "operation" else document["actions"][0]["requests"][0]
    )
    target[field] = value
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PlanError, match="corrupt"):
        load(saved)
