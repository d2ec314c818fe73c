"""Update bodies keep the service's contract: what a reset sends, what kinesis takes in place.

A ``null`` resets a field to the service's default; the update sends null where the contract's
patch body takes it and the default itself where the field is an enumeration without null (kafka
``authentication``). Kinesis ``authentication``, ``iamRole`` and ``accessKey`` are fields of the
contract's kinesis patch source: a change of them is an update, not a replacement. Every body
planned here is judged by the contract oracle as the client would send it.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.secrets import Secret, reveal
from reconciler.plan.actions import Op
from tests.contract.oracle import Contract
from tests.support.plan_inputs import KAFKA_LIVE, plan_for
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

PATH = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
KINESIS_LIVE: dict[str, Any] = {
    "id": "pipe-1",
    "name": "orders",
    "state": "Running",
    "source": {
        "kinesis": {
            "streamName": "clicks",
            "region": "us-east-1",
            "format": "JSONEachRow",
            "iteratorType": "LATEST",
            "authentication": "IAM_ROLE",
            "iamRole": "arn:aws:iam::1:role/reader",
        }
    },
}


def _judged(body: Any) -> list[str]:
    return Contract.load().judge_request("PATCH", PATH, reveal(body))


def test_a_kafka_authentication_reset_sends_the_default_not_a_null() -> None:
    live = {
        **KAFKA_LIVE,
        "source": {"kafka": {**KAFKA_LIVE["source"]["kafka"], "authentication": "IAM_ROLE"}},
    }
    credentials = {"username": Secret("u"), "password": Secret("p")}
    spec = {"source": {"kafka": {"authentication": None, "credentials": credentials}}}

    action = plan_for(spec, live)

    (request,) = action.requests
    assert request.body["source"]["kafka"]["authentication"] == "PLAIN"
    assert _judged(request.body) == []


def test_a_reset_of_a_nullable_setting_still_sends_null() -> None:
    action = plan_for({"settings": {"engine_max_threads": None}}, KAFKA_LIVE)

    (request,) = action.requests
    assert request.body == {"settings": {"engine_max_threads": None}}
    assert _judged(request.body) == []


@pytest.mark.parametrize(
    ("kinesis", "body"),
    [
        (
            {
                "authentication": "IAM_USER",
                "accessKey": {"accessKeyId": Secret("AKIA"), "secretKey": Secret("s")},
            },
            {
                "authentication": "IAM_USER",
                "accessKey": {"accessKeyId": "AKIA", "secretKey": "s"},
            },
        ),
        (
            {"authentication": "IAM_ROLE", "iamRole": "arn:aws:iam::1:role/other"},
            {"iamRole": "arn:aws:iam::1:role/other"},
        ),
    ],
)
def test_a_kinesis_authentication_change_is_planned_as_an_update(
    kinesis: dict[str, Any], body: dict[str, Any]
) -> None:
    action = plan_for({"source": {"kinesis": kinesis}}, KINESIS_LIVE)

    assert action.operation is Op.UPDATE, action.errors
    (request,) = action.requests
    assert request.method == "PATCH"
    assert reveal(request.body) == {"source": {"kinesis": body}}
    assert _judged(request.body) == []
