"""``Action.basis_hash``: omitted, it is the content hash of the basis, worked out only when
first read (a text plan never reads it); given, it is kept as given, ``None`` included; it
survives ``replace``, equality, pickling and a plan file round trip."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from reconciler.client.live import Observed
from reconciler.model.errors import Location
from reconciler.model.resources import Resource
from reconciler.plan import actions, planfile
from reconciler.plan.actions import Action, Op, Plan
from reconciler.plan.diff import SecretCheck, content_hash
from reconciler.plan.planners import plan_organization, plan_pipe

BASIS = {"name": "orders", "settings": {"engine_max_threads": 4.0}}


def _action(**fields: object) -> Action:
    return Action("Pipe", "orders", Op.NOOP, Location("orders.yaml", 5, 3), **fields)  # type: ignore[arg-type]


def test_omitted_basis_hash_should_be_the_content_hash_of_the_basis_worked_out_on_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[object] = []

    def counting(value: object) -> str:
        calls.append(value)
        return content_hash(value)

    monkeypatch.setattr(actions, "content_hash", counting)
    action = _action(basis=BASIS)
    assert calls == []
    assert action.basis_hash == content_hash(BASIS)
    assert action.basis_hash == content_hash(BASIS)
    assert calls == [BASIS]  # once
    assert _action().basis_hash is None  # no basis, no hash


def test_given_basis_hash_should_be_kept_as_given_none_included() -> None:
    assert _action(basis=BASIS, basis_hash="sha256:given").basis_hash == "sha256:given"
    assert _action(basis=BASIS, basis_hash=None).basis_hash is None


def test_planned_pipes_and_organizations_should_carry_the_hash_of_their_basis() -> None:
    resource = Resource(
        "Organization", "acme", {"organizationId": "org-1", "name": "Acme"}, "o.yaml"
    )
    live = {"name": "Old", "privateEndpoints": []}
    action = plan_organization(
        resource, Observed(live=live, path="/v1/organizations/org-1"), "org-1"
    )
    assert action.basis == {"name": "Old"}
    assert action.basis_hash == content_hash({"name": "Old"})
    pipe = Resource("Pipe", "p", {"name": "p", "settings": {"a": 1}}, "p.yaml")
    planned = plan_pipe(
        pipe,
        pipe.spec,
        Observed(live={"name": "p", "settings": {"a": 2.0}}, path="/p"),
        SecretCheck(None, {}),
        ids={"pipeId": "p"},
    )
    assert planned.basis_hash == content_hash({"name": "p", "settings": {"a": 2}})


def test_basis_hash_should_survive_replace_equality_pickling_and_a_plan_file(
    tmp_path: Path,
) -> None:
    action = _action(basis=BASIS)
    assert dataclasses.replace(action, name="other").basis_hash == content_hash(BASIS)
    assert action == _action(basis=BASIS, basis_hash=content_hash(BASIS))
    assert action != _action(basis=BASIS, basis_hash=None)
    assert pickle.loads(pickle.dumps(action)) == action
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.basis_hash = "sha256:other"  # type: ignore[misc]
    path = tmp_path / "plan.json"
    path.write_text(planfile.dumps(Plan(actions=(action,))), encoding="utf-8")
    (loaded,) = planfile.load(path).actions
    assert loaded.basis_hash == content_hash(BASIS)
    assert loaded == action
