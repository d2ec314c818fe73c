"""The live object each manifest manages, as compared across environments (``settings.overlap``).

Table-driven: a pipe is known by its pinned id, else by its service and name; a dashboard by
its ``spec.name`` (default ``metadata.name``) on the dashboards server; an organization by its
id. Two environments meet only on the same server and organization.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.model.resources import Resource
from reconciler.settings import resolve
from reconciler.settings.overlap import identities

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
PIPE_ID = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"


@pytest.mark.parametrize(
    ("kind", "name", "spec", "expected"),
    [
        ("Pipe", "p", {"pipeId": PIPE_ID}, [("pipe", "http://a", ORG, PIPE_ID)]),
        (
            "Pipe",
            "p",
            {"service": "analytics", "name": "orders"},
            [("pipe named", "http://a", ORG, "analytics/orders")],
        ),
        (
            "Pipe",
            "p",
            {"organizationId": "other", "pipeId": PIPE_ID},
            [("pipe", "http://a", "other", PIPE_ID)],
        ),
        (
            "Dashboard",
            "d",
            {"name": "Overview"},
            [("dashboard named", "http://d", ORG, "Overview")],
        ),
        ("Dashboard", "d", {}, [("dashboard named", "http://d", ORG, "d")]),
        ("Organization", "acme", {"organizationId": ORG}, [("organization", "http://a", ORG, ORG)]),
    ],
    ids=[
        "pinned_pipe",
        "pipe_by_name",
        "pipe_in_its_own_org",
        "dashboard",
        "dashboard_default_name",
        "organization",
    ],
)
def test_identity_of_each_kind(
    tmp_path: Path, kind: str, name: str, spec: dict[str, Any], expected: list[Any]
) -> None:
    settings = resolve(
        {"base_url": "http://a", "dashboards_url": "http://d", "organization": ORG},
        cwd=str(tmp_path),
        environ={"RECONCILE_CONFIG": ""},
    )
    found = [ident for ident, _ in identities(Resource(kind, name, spec, "x.yaml"), settings)]
    assert found == expected
