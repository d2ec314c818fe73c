"""The one path builder inserts every id as exactly one path segment, whatever the id holds."""

from __future__ import annotations

import pytest

from reconciler.client import paths

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"


def test_a_uuid_or_server_assigned_id_is_inserted_unchanged() -> None:
    assert paths.pipe_path(ORG, SERVICE, "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61") == (
        f"/v1/organizations/{ORG}/services/{SERVICE}/pipes/0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"
    )
    assert paths.dashboard_path("a61efa2287344d65a7c771ee") == (
        "/api/v2/dashboards/a61efa2287344d65a7c771ee"
    )


@pytest.mark.parametrize(
    ("given", "segment"),
    [
        ("../../../x", "..%2F..%2F..%2Fx"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("a b?c#d", "a%20b%3Fc%23d"),
    ],
)
def test_an_id_typed_by_a_user_cannot_leave_its_segment(given: str, segment: str) -> None:
    # Acceptance finding: `reconcile get endpoint ../../../x --service analytics` requested
    # /v1/organizations/<org>/x (the id was inserted as given and the dots were resolved).
    assert paths.endpoint_path(ORG, SERVICE, given) == (
        f"/v1/organizations/{ORG}/services/{SERVICE}/pipesReversePrivateEndpoints/{segment}"
    )
    assert paths.dashboard_path(given) == f"/api/v2/dashboards/{segment}"
    assert paths.organization_path(given) == f"/v1/organizations/{segment}"
