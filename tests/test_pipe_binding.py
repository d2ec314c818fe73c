"""The pipe binder (``plan.pipebinding``): each manifest's binding names its live pipe's id, and
holds no live pipe itself (that travels in ``Observed`` and is let go once the pipe is planned)."""

from __future__ import annotations

from reconciler.client.paths import PipeIds
from reconciler.model.identity import Binding, Bound, Identities
from reconciler.model.json import JsonObject
from reconciler.model.resources import Resource
from reconciler.plan.pipebinding import PipeBinder


def bind_one(spec: JsonObject, listed: dict[str, JsonObject]) -> Binding:
    resource = Resource("Pipe", "orders", spec, "m.yaml")
    pipe_id = str(spec.get("pipeId", ""))
    ids = {resource.key: PipeIds("org-1", "svc-1", pipe_id)}
    bindings: dict[str, Binding] = {}
    PipeBinder(Identities({}, {}), bindings, ids).bind_all("svc-1", [resource], listed)
    return bindings[resource.key]


def test_a_pinned_pipe_is_bound_by_its_id_without_keeping_the_live_pipe() -> None:
    # A binding holding its live pipe kept every pipe of a 10,000-pipe plan alive (+35 MB).
    binding = bind_one({"pipeId": "p-1", "name": "orders"}, {"p-1": {"id": "p-1", "name": "x"}})
    assert (binding.how, binding.id, binding.live) == (Bound.PINNED, "p-1", None)


def test_a_pipe_adopted_by_name_is_bound_by_its_id_without_keeping_the_live_pipe() -> None:
    binding = bind_one({"name": "orders"}, {"p-2": {"id": "p-2", "name": "orders"}})
    assert (binding.how, binding.id, binding.live) == (Bound.ADOPTED, "p-2", None)


def test_a_pipe_no_live_pipe_matches_is_new() -> None:
    binding = bind_one({"name": "orders"}, {"p-3": {"id": "p-3", "name": "other"}})
    assert (binding.how, binding.id, binding.live) == (Bound.NEW, None, None)
