"""The plan as JSON (``reconciler.plan.planfile``): versioned document, round trip through a saved
file (equal actions except secrets), redaction, refusal of foreign or corrupt files, and
``apply``'s ``secrets_for_saved_plan`` that re-resolves secrets against saved fingerprints."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reconciler.apply.savedplan import secrets_for_saved_plan
from reconciler.client.live import Observed
from reconciler.model.errors import Location, PlanError
from reconciler.model.resources import FixedLocator, Resource
from reconciler.model.secrets import REDACTED, Secret, fingerprint, redact
from reconciler.plan.actions import (
    PLAN_FORMAT_VERSION,
    Action,
    Plan,
    error_action,
)
from reconciler.plan.dashboards import plan_dashboard, plan_prune
from reconciler.plan.diff import ChangeKind, SecretCheck
from reconciler.plan.planfile import SENSITIVE_TEXT, dumps, load, plan_to_json
from reconciler.plan.planners import plan_organization, plan_pipe
from reconciler.state.local import DashboardRecord

SECRET_VALUE = "s3cr3t-VALUE-x9-never-print"
KEY = b"k" * 32
IDS = {"organizationId": "o", "serviceId": "s", "pipeId": "p"}
WHERE = Location("pipes/orders.yaml", 14, 7)
PG_LIVE = {
    "name": "cdc",
    "state": "Paused",
    "source": {
        "postgres": {
            "host": "db",
            "tableMappings": [
                {"sourceSchemaName": "public", "sourceTable": "a", "targetTable": "a"},
                {
                    "sourceSchemaName": "public",
                    "sourceTable": "b",
                    "targetTable": "b",
                    "excludedColumns": [],
                },
            ],
        }
    },
    "settings": {"engine_max_threads": 4},
}


def pipe_spec() -> dict[str, Any]:
    return {
        **IDS,
        "name": "cdc-2",
        "source": {
            "postgres": {
                "host": "db2",
                "credentials": {"username": Secret("app"), "password": Secret(SECRET_VALUE)},
                "tableMappings": [
                    {
                        "sourceSchemaName": "public",
                        "sourceTable": "b",
                        "targetTable": "b",
                        "excludedColumns": ["pii"],
                    },
                    {"sourceSchemaName": "public", "sourceTable": "c", "targetTable": "c"},
                ],
            }
        },
        "settings": {"engine_max_threads": 8.0},
    }


def sample_plan() -> Plan:
    resource = Resource(
        "Pipe", "cdc", pipe_spec(), "pipes/orders.yaml", locator=FixedLocator(WHERE)
    )
    pipe = plan_pipe(
        resource,
        resource.spec,
        Observed(PG_LIVE, path="/v1/organizations/o/services/s/pipes/p"),
        SecretCheck(KEY, {}),
        ids=IDS,
    )
    org = plan_organization(
        Resource(
            "Organization",
            "acme",
            {"organizationId": "o", "name": "Acme", "privateEndpoints": [{"id": "pe-2"}]},
            "org.yaml",
        ),
        Observed(
            {"name": "Old", "privateEndpoints": [{"id": "pe-1", "description": ""}]},
            path="/v1/organizations/o",
        ),
        "o",
    )
    dash = plan_dashboard(
        Resource("Dashboard", "ops", {"name": "Ops", "tiles": [{"x": 0, "w": 6}]}, "d.yaml"),
        None,
        None,
        can_read=False,
        can_update=False,
        replace=False,
    )
    prune = plan_prune(
        "gone", DashboardRecord("d-9", "h", True), can_delete=True, location=Location("s.json")
    )
    failed = error_action("Pipe", "broken", Location("b.yaml", 2, 1), "GET: 404", {"pipeId": "x"})
    return Plan(
        (pipe, org, dash, prune, failed),
        requests_made={"management": 3},
        manifest_paths=("manifests",),
        notes=("a note",),
    )


def without_secrets(action: Action) -> Action:
    """What a saved plan keeps of an action: bodies redacted, sensitive values replaced."""
    return replace(
        action,
        changes=tuple(
            replace(c, new=REDACTED) if c.kind is ChangeKind.SENSITIVE else c
            for c in action.changes
        ),
        requests=tuple(
            replace(r, body=redact(r.body) if r.body is not None else None) for r in action.requests
        ),
    )


def test_planfile_round_trip_gives_equal_actions_except_secrets(tmp_path: Path) -> None:
    plan = sample_plan()
    path = tmp_path / "plan.json"
    path.write_text(dumps(plan), encoding="utf-8")
    loaded = load(path)
    assert loaded.actions == tuple(without_secrets(a) for a in plan.actions)
    assert loaded.requests_made == plan.requests_made
    assert loaded.manifest_paths == plan.manifest_paths
    assert loaded.notes == plan.notes
    assert loaded.summary() == plan.summary()


def test_planfile_keeps_request_order_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(dumps(sample_plan()), encoding="utf-8")
    pipe = load(path).actions[0]
    assert [(r.purpose, r.idempotent) for r in pipe.requests] == [
        ("remove table mappings", False),
        ("add table mappings", False),
    ]
    assert pipe.requests[0].body is not None
    assert pipe.requests[0].body["source"]["postgres"]["credentials"] == {
        "username": REDACTED,
        "password": REDACTED,
    }


def test_planfile_never_holds_a_secret_only_its_fingerprint() -> None:
    plan = sample_plan()
    text = dumps(plan)
    assert SECRET_VALUE not in text
    doc = json.loads(text)
    (sensitive,) = [c for c in doc["actions"][0]["changes"] if c["kind"] == "sensitive"]
    assert sensitive == {
        "path": "source.postgres.credentials",
        "pathParts": ["source", "postgres", "credentials"],
        "kind": "sensitive",
        "location": {"file": "pipes/orders.yaml", "line": 14, "col": 7},
        "new": SENSITIVE_TEXT,
    }
    creds = {"username": Secret("app"), "password": Secret(SECRET_VALUE)}
    assert doc["actions"][0]["secrets"] == {"source.postgres.credentials": fingerprint(KEY, creds)}


def test_planfile_document_is_versioned_with_summary() -> None:
    doc = plan_to_json(sample_plan())
    assert doc["formatVersion"] == PLAN_FORMAT_VERSION
    assert doc["summary"] == sample_plan().summary()
    assert doc["requestsMade"] == {"management": 3}
    assert [a["resource"] for a in doc["actions"]] == [
        "Pipe/cdc",
        "Organization/acme",
        "Dashboard/ops",
        "Dashboard/gone",
        "Pipe/broken",
    ]


def test_planfile_omits_absent_values_so_null_means_null() -> None:
    doc = plan_to_json(sample_plan())
    adds = [c for c in doc["actions"][0]["changes"] if c["kind"] == "add"]
    assert adds[1] == {
        "path": "source.postgres.tableMappings[public.c → c]",
        "pathParts": ["source", "postgres", "tableMappings", "public.c → c"],
        "kind": "add",
        "location": {"file": "pipes/orders.yaml", "line": 14, "col": 7},
        "new": {"sourceSchemaName": "public", "sourceTable": "c", "targetTable": "c"},
    }
    prune = doc["actions"][3]["changes"][0]
    assert "new" not in prune
    assert prune["old"] == "d-9"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("{not json", "cannot read plan file", id="corrupt-json"),
        pytest.param('{"hello": 1}', "is not a reconcile plan file", id="foreign-json"),
        pytest.param("[1, 2]", "is not a reconcile plan file", id="json-array"),
        pytest.param(
            '{"formatVersion": 99, "actions": []}', "has format 99", id="newer-format-version"
        ),
        pytest.param(
            json.dumps({"formatVersion": PLAN_FORMAT_VERSION, "actions": [{"name": "x"}]}),
            "is corrupt",
            id="action-without-kind",
        ),
        pytest.param(
            json.dumps(
                {
                    "formatVersion": PLAN_FORMAT_VERSION,
                    "actions": [
                        {
                            "kind": "Pipe",
                            "name": "x",
                            "operation": "update",
                            "changes": [{"kind": "bogus"}],
                        }
                    ],
                }
            ),
            "is corrupt",
            id="unknown-change-kind",
        ),
    ],
)
def test_planfile_load_refuses_foreign_or_corrupt_files(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PlanError, match=message):
        load(path)


def test_planfile_load_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read plan file"):
        load(tmp_path / "absent.json")


# -- secrets_for_saved_plan -------------------------------------------------------------------


def saved(tmp_path: Path) -> Plan:
    path = tmp_path / "plan.json"
    path.write_text(dumps(sample_plan()), encoding="utf-8")
    return load(path)


def test_saved_plan_secrets_are_resolved_again_and_matched_by_fingerprint(tmp_path: Path) -> None:
    spec = pipe_spec()
    out = secrets_for_saved_plan(
        saved(tmp_path), {"Pipe/cdc": spec}, lambda value: fingerprint(KEY, value)
    )
    assert out == {
        "Pipe/cdc": {
            ("source", "postgres", "credentials"): spec["source"]["postgres"]["credentials"]
        }
    }


def test_saved_plan_refuses_a_secret_changed_since_planning(tmp_path: Path) -> None:
    spec = pipe_spec()
    spec["source"]["postgres"]["credentials"] = {
        "username": Secret("app"),
        "password": Secret("rotated"),
    }
    with pytest.raises(PlanError, match="differs from the one the plan was made with"):
        secrets_for_saved_plan(
            saved(tmp_path), {"Pipe/cdc": spec}, lambda value: fingerprint(KEY, value)
        )


def test_saved_plan_refuses_a_secret_whose_manifest_is_gone(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="no longer among"):
        secrets_for_saved_plan(saved(tmp_path), {}, lambda value: fingerprint(KEY, value))
