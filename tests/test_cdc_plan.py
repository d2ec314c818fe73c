"""Planning a service's CDC scaling (pure): one PATCH of the stated fields when they differ,
set after the service's first database pipe when the same plan creates it, else refused."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.client.livestate import ServiceCdc
from reconciler.model.cdc import ratio_error
from reconciler.model.errors import Location
from reconciler.model.resources import Resource
from reconciler.plan.actions import Action, Op, Purpose, Request
from reconciler.plan.cdc import creates_database_pipe, plan_cdc

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
PATH = f"/v1/organizations/{ORG}/services/{SERVICE}/pipesCdcScaling"
LIVE = {"replicaCpuMillicores": 2000, "replicaMemoryGb": 8}


def _resource(**fields: Any) -> Resource:
    return Resource(
        "CdcScaling", "cdc", {"organizationId": ORG, "serviceId": SERVICE, **fields}, "c.yaml"
    )


@pytest.mark.parametrize(
    ("fields", "operation", "body"),
    [
        ({"replicaCpuMillicores": 2000, "replicaMemoryGb": 8}, Op.NOOP, None),
        ({"replicaCpuMillicores": 2000}, Op.NOOP, None),
        ({"replicaCpuMillicores": 4000}, Op.UPDATE, {"replicaCpuMillicores": 4000}),
        (
            {"replicaCpuMillicores": 4000, "replicaMemoryGb": 16},
            Op.UPDATE,
            {"replicaCpuMillicores": 4000, "replicaMemoryGb": 16},
        ),
        ({"replicaMemoryGb": 8.0}, Op.NOOP, None),
    ],
)
def test_a_difference_is_one_patch_of_the_stated_fields(
    fields: dict[str, Any], operation: Op, body: dict[str, Any] | None
) -> None:
    action = plan_cdc(_resource(**fields), ServiceCdc(ORG, SERVICE, live=LIVE))
    assert action.operation is operation
    assert [(r.method, r.path, r.body) for r in action.requests] == (
        [("PATCH", PATH, body)] if body else []
    )


def test_without_a_database_pipe_it_follows_the_one_the_plan_creates_or_is_refused() -> None:
    absent = ServiceCdc(ORG, SERVICE, absent="Service has no database pipe")
    refused = plan_cdc(_resource(replicaCpuMillicores=3000), absent)
    assert refused.operation is Op.ERROR and "no database pipe yet" in refused.errors[0]
    later = plan_cdc(_resource(replicaCpuMillicores=3000), absent, ["Pipe/crm"])
    assert later.operation is Op.UPDATE
    assert "set after Pipe/crm is created" in later.warnings[0]


@pytest.mark.parametrize(
    ("source", "service", "expected"),
    [
        ({"postgres": {}}, SERVICE, True),
        ({"kafka": {}}, SERVICE, False),
        ({"postgres": {}}, "x", False),
    ],
)
def test_a_database_pipe_created_on_the_service_is_recognised(
    source: dict[str, Any], service: str, expected: bool
) -> None:
    post = Request("POST", "/p", {"source": source}, purpose=Purpose.CREATE)
    action = Action(
        "Pipe", "p", Op.CREATE, Location("p.yaml"), requests=(post,), target={"serviceId": service}
    )
    assert creates_database_pipe(action, SERVICE) is expected


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"replicaCpuMillicores": 3000, "replicaMemoryGb": 12}, None),
        ({"replicaCpuMillicores": 3000}, None),
        (
            {"replicaCpuMillicores": 3000, "replicaMemoryGb": 8},
            "12 for replicaCpuMillicores 3000, not 8",
        ),
    ],
)
def test_memory_goes_4_gb_per_core(spec: dict[str, Any], problem: str | None) -> None:
    found = ratio_error(spec)
    assert (found is None) if problem is None else (found is not None and problem in found)
