"""Pure planning: exact minimal request bodies, request order and idempotency, pipe errors
(mapping edits on a running pipe, Completed pipes, endpoints, fetch errors, expectations),
organizations, dashboards with and without list/update, prune, summaries, locations, and
apply's pure convergence check ``unconverged``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from reconciler.apply.verify import unconverged
from reconciler.client.config import DASHBOARDS
from reconciler.client.live import Observed
from reconciler.model.errors import Location
from reconciler.model.resources import PathPart, Resource
from reconciler.model.secrets import Secret, fingerprint, reveal
from reconciler.plan.actions import Action, Op, Plan, Purpose, error_action
from reconciler.plan.dashboards import plan_dashboard, plan_prune
from reconciler.plan.diff import MISSING, ChangeKind, FieldChange, SecretCheck, content_hash
from reconciler.plan.planners import plan_organization, plan_pipe
from reconciler.state.local import DashboardRecord
from tests.support.plan_inputs import (
    IDS,
    KAFKA_LIVE,
    KEY,
    LOCATOR,
    NO_SECRETS,
    ORG_PATH,
    PIPE_PATH,
    LineLocator,
    pg_live,
    pg_spec,
    plan_for,
    tm,
)


def bodies(action: Action) -> list[Any]:
    return [r.body for r in action.requests]


# -- minimal bodies ---------------------------------------------------------------------------

BODY_CASES = [
    pytest.param(
        {"settings": {"engine_max_threads": 8, "streaming_max_insert_wait_ms": 5000}},
        {"settings": {"engine_max_threads": 8}},
        id="one-setting-only-the-changed-leaf",
    ),
    pytest.param({"name": "orders-v2"}, {"name": "orders-v2"}, id="name-only"),
    pytest.param(
        {"fieldMappings": [{"sourceField": "order_id", "destinationField": "id"}]},
        {"fieldMappings": [{"sourceField": "order_id", "destinationField": "id"}]},
        id="fieldMappings-whole-array",
    ),
    pytest.param(
        {"destination": {"table": "orders", "columns": [{"name": "id", "type": "UInt64"}]}},
        {"destination": {"columns": [{"name": "id", "type": "UInt64"}]}},
        id="destination-columns-without-met-expectations",
    ),
    pytest.param(
        {
            "source": {"kafka": {"reversePrivateEndpointIds": ["e1"], "iamRole": "arn:new"}},
            "settings": {"engine_max_threads": 4, "streaming_max_insert_wait_ms": 6000},
        },
        {
            "source": {"kafka": {"iamRole": "arn:new"}},
            "settings": {"streaming_max_insert_wait_ms": 6000},
        },
        id="several-subtrees-merged-partial-objects",
    ),
    pytest.param(
        {"source": {"kafka": {"iamRole": "arn:new"}, "validateSamples": True}},
        {"source": {"kafka": {"iamRole": "arn:new"}, "validateSamples": True}},
        id="validateSamples-rides-along-with-source-changes",
    ),
    pytest.param(
        {"source": {"validateSamples": True}, "settings": {"engine_max_threads": 2}},
        {"settings": {"engine_max_threads": 2}},
        id="validateSamples-not-sent-without-source-changes",
    ),
    pytest.param(
        {"settings": {"streaming_max_insert_wait_ms": 5000.0}},
        None,
        id="5000.0-sends-nothing",
    ),
]


class AskedLocator(LineLocator):
    """A locator that remembers every path it was asked for."""

    def __init__(self) -> None:
        super().__init__({("metadata", "name"): 4, ("spec",): 6})
        self.asked: list[tuple[PathPart, ...]] = []

    def locate(self, path: Sequence[PathPart]) -> Location:
        self.asked.append(tuple(path))
        return super().locate(path)


def test_plan_pipe_of_a_pinned_pipe_without_a_replacement_never_locates_its_pipe_id() -> None:
    # Locating a path beyond metadata.name parses the manifest again (plan loading keeps
    # only name positions): done for every pinned pipe, it doubled a 10,000-pipe plan.
    locator = AskedLocator()
    resource = Resource("Pipe", "orders", {**IDS, "settings": {"a": 1}}, "m.yaml", locator=locator)
    live = {"id": "pipe-1", "settings": {"a": 1}}
    observed = Observed(live=live, path=PIPE_PATH)
    action = plan_pipe(resource, resource.spec, observed, NO_SECRETS, ids=IDS)
    assert action.operation is Op.NOOP
    assert ("spec", "pipeId") not in locator.asked


@pytest.mark.parametrize(("spec", "body"), BODY_CASES)
def test_plan_pipe_sends_the_minimal_body(spec: dict[str, Any], body: Any) -> None:
    action = plan_for(spec, KAFKA_LIVE)
    if body is None:
        assert action.operation == Op.NOOP
        assert action.requests == ()
        assert not action.has_changes
    else:
        assert action.operation == Op.UPDATE
        assert [(r.method, r.path, r.body, r.idempotent) for r in action.requests] == [
            ("PATCH", PIPE_PATH, body, True)
        ]


def test_plan_pipe_sends_secrets_on_first_apply_and_records_their_fingerprint() -> None:
    creds = {"username": Secret("u"), "password": Secret("p-1")}
    action = plan_for({"source": {"kafka": {"credentials": creds}}}, KAFKA_LIVE)
    (request,) = action.requests
    assert reveal(request.body) == {
        "source": {"kafka": {"credentials": {"username": "u", "password": "p-1"}}}
    }
    assert action.secrets == {"source.kafka.credentials": fingerprint(KEY, creds)}
    assert [c.kind for c in action.changes] == [ChangeKind.SENSITIVE]


def test_plan_pipe_sends_no_secret_whose_fingerprint_is_recorded() -> None:
    creds = {"username": Secret("u"), "password": Secret("p-1")}
    recorded = SecretCheck(KEY, {"source.kafka.credentials": fingerprint(KEY, creds)})
    action = plan_for({"source": {"kafka": {"credentials": creds}}}, KAFKA_LIVE, secrets=recorded)
    assert action.operation == Op.NOOP
    assert action.requests == ()
    assert action.secrets == {}


def test_plan_pipe_basis_holds_managed_live_fields_but_no_secret() -> None:
    creds = {"username": Secret("u"), "password": Secret("p")}
    spec = {"source": {"kafka": {"credentials": creds, "iamRole": "x"}}, "settings": {"a": 1}}
    action = plan_for(spec, KAFKA_LIVE)
    assert action.basis == {"source": {"kafka": {"iamRole": "arn:old"}}, "settings": {}}
    assert action.basis_hash == content_hash(action.basis)
    assert action.target == IDS


# -- table mappings: order and idempotency ------------------------------------------------------


def test_plan_should_add_new_table_mapping_in_one_non_idempotent_patch() -> None:
    new = tm("c", excludedColumns=["secret_col"])
    action = plan_for(pg_spec([tm("a"), new]), pg_live([tm("a")]))
    assert [(r.body, r.idempotent) for r in action.requests] == [
        ({"source": {"postgres": {"tableMappingsToAdd": [new]}}}, False)
    ]


def test_plan_should_remove_table_mapping_by_its_key_fields_only() -> None:
    live = [tm("a"), tm("b", excludedColumns=["x"], useCustomSortingKey=False)]
    action = plan_for(pg_spec([tm("a")]), pg_live(live))
    assert bodies(action) == [{"source": {"postgres": {"tableMappingsToRemove": [tm("b")]}}}]
    assert action.requests[0].idempotent is False


def test_plan_should_add_and_remove_different_tables_in_one_patch() -> None:
    action = plan_for(pg_spec([tm("a"), tm("c")]), pg_live([tm("a"), tm("b")]))
    assert bodies(action) == [
        {
            "source": {
                "postgres": {"tableMappingsToRemove": [tm("b")], "tableMappingsToAdd": [tm("c")]}
            }
        }
    ]


def test_plan_should_remove_then_add_changed_table_mapping() -> None:
    old = tm("b", excludedColumns=[])
    new = tm("b", excludedColumns=["pii"])
    action = plan_for(pg_spec([tm("a"), new]), pg_live([tm("a"), old]))
    assert [(r.method, r.path, r.body, r.idempotent, r.purpose) for r in action.requests] == [
        (
            "PATCH",
            PIPE_PATH,
            {"source": {"postgres": {"tableMappingsToRemove": [tm("b")]}}},
            False,
            "remove table mappings",
        ),
        (
            "PATCH",
            PIPE_PATH,
            {"source": {"postgres": {"tableMappingsToAdd": [new]}}},
            False,
            "add table mappings",
        ),
    ]


def test_plan_should_split_when_a_source_table_moves_to_another_target() -> None:
    action = plan_for(pg_spec([tm("b", "b2")]), pg_live([tm("b")]))
    assert bodies(action) == [
        {"source": {"postgres": {"tableMappingsToRemove": [tm("b")]}}},
        {"source": {"postgres": {"tableMappingsToAdd": [tm("b", "b2")]}}},
    ]


def test_plan_should_put_other_changes_in_the_first_of_two_patches() -> None:
    spec = pg_spec(
        [tm("b", excludedColumns=["y"]), tm("c")],
        settings={"engine_max_threads": 8},
    )
    spec["source"]["postgres"]["settings"] = {"syncIntervalSeconds": 30}
    spec["source"]["validateSamples"] = False
    action = plan_for(spec, pg_live([tm("a"), tm("b", excludedColumns=["x"])]))
    assert bodies(action) == [
        {
            "settings": {"engine_max_threads": 8},
            "source": {
                "postgres": {
                    "settings": {"syncIntervalSeconds": 30},
                    "tableMappingsToRemove": [tm("b"), tm("a")],
                },
                "validateSamples": False,
            },
        },
        {
            "source": {
                "postgres": {"tableMappingsToAdd": [tm("b", excludedColumns=["y"]), tm("c")]},
                "validateSamples": False,
            }
        },
    ]


def test_plan_should_refuse_a_mapping_edit_on_a_pipe_that_is_not_paused() -> None:
    action = plan_for(pg_spec([tm("a"), tm("c")]), pg_live([tm("a")], state="Running"))
    assert action.operation == Op.ERROR
    assert action.requests == ()
    assert not action.has_changes
    (error,) = action.errors
    assert "only be edited while the pipe is Paused (it is Running)" in error
    assert "pause the pipe, apply, then resume it" in error
    assert [c.kind for c in action.changes] == [ChangeKind.ADD]


def test_plan_should_allow_other_edits_on_a_running_postgres_pipe() -> None:
    action = plan_for(pg_spec([tm("a")], name="cdc-2"), pg_live([tm("a")], state="Running"))
    assert action.errors == ()
    assert bodies(action) == [{"name": "cdc-2"}]


def test_plan_should_refuse_updates_to_a_completed_pipe() -> None:
    live = {**KAFKA_LIVE, "state": "Completed"}
    action = plan_for({"name": "x"}, live)
    assert action.operation == Op.ERROR
    assert action.errors == (
        "the pipe is Completed: the service rejects updates to a completed pipe",
    )
    assert action.requests == ()


def test_plan_should_leave_an_unchanged_completed_pipe_alone() -> None:
    action = plan_for({"name": "orders"}, {**KAFKA_LIVE, "state": "Completed"})
    assert action.operation == Op.NOOP
    assert action.errors == ()


@pytest.mark.parametrize(
    ("status", "message"),
    [
        pytest.param(None, "reverse private endpoint e9 does not exist", id="missing-endpoint"),
        pytest.param(
            "Provisioning",
            "reverse private endpoint e9 is Provisioning, not Ready",
            id="endpoint-not-ready",
        ),
    ],
)
def test_plan_should_report_an_endpoint_that_is_missing_or_not_ready(
    status: str | None, message: str
) -> None:
    spec = {"source": {"kafka": {"reversePrivateEndpointIds": ["e9"]}}}
    action = plan_for(spec, KAFKA_LIVE, endpoints={"e9": status})
    assert action.operation == Op.ERROR
    assert action.errors == (message,)
    assert action.requests == ()


def test_plan_should_accept_ready_endpoints() -> None:
    spec = {"source": {"kafka": {"reversePrivateEndpointIds": ["e9"]}}}
    action = plan_for(spec, KAFKA_LIVE, endpoints={"e9": "Ready"})
    assert action.errors == ()
    assert bodies(action) == [{"source": {"kafka": {"reversePrivateEndpointIds": ["e9"]}}}]


def test_plan_should_turn_a_differing_expectation_into_an_error() -> None:
    locator = LineLocator({("metadata", "name"): 4, ("spec", "state"): 11})
    resource = Resource(
        "Pipe", "orders", {**IDS, "state": "Completed", "name": "new"}, "m.yaml", locator=locator
    )
    action = plan_pipe(
        resource, resource.spec, Observed(KAFKA_LIVE, path=PIPE_PATH), NO_SECRETS, ids=IDS
    )
    assert action.operation == Op.ERROR
    assert action.requests == ()
    assert action.errors == (
        "state is 'Running' but the manifest (m.yaml:11:1) expects 'Completed': "
        "it cannot be changed through the API",
    )


def _brokers_changed(pinned: bool) -> Resource:
    locator = LineLocator({("metadata", "name"): 4, ("spec", "source", "kafka", "brokers"): 11})
    ids = IDS if pinned else {k: v for k, v in IDS.items() if k != "pipeId"}
    kafka = {"brokers": "b-2:9092", "topics": "orders", "format": "JSONEachRow"}
    spec = {
        **ids,
        "name": "orders",
        "source": {"kafka": {**kafka, "authentication": "IAM_ROLE", "iamRole": "arn:r"}},
        "destination": {"database": "d", "table": "t", "columns": [{"name": "id", "type": "S"}]},
        "fieldMappings": [{"sourceField": "id", "destinationField": "id"}],
    }
    return Resource("Pipe", "orders", spec, "m.yaml", locator=locator)


def test_a_differing_create_time_field_of_a_pinned_pipe_is_an_error_even_with_replace() -> None:
    resource = _brokers_changed(pinned=True)
    action = plan_pipe(
        resource,
        resource.spec,
        Observed(KAFKA_LIVE, path=PIPE_PATH),
        NO_SECRETS,
        ids=IDS,
        replace=True,
    )
    assert action.operation == Op.ERROR and action.requests == ()
    assert action.errors[0].startswith(
        "must be replaced (source.kafka.brokers: b-1:9092 → b-2:9092"
    )
    assert "but the pipe is pinned by spec.pipeId" in action.errors[0]


def test_a_differing_create_time_field_needs_replace_and_says_so() -> None:
    resource = _brokers_changed(pinned=False)
    observed = Observed(KAFKA_LIVE, path=PIPE_PATH)
    refused = plan_pipe(resource, resource.spec, observed, NO_SECRETS, ids=IDS)
    assert refused.operation == Op.ERROR and refused.requests == ()
    (error,) = refused.errors
    assert error.startswith("must be replaced (source.kafka.brokers: b-1:9092 → b-2:9092; ")
    assert error.endswith(
        "create-time field(s) differ (m.yaml:11:1); pass --replace to delete the pipe and "
        "create it again (ingestion restarts)"
    )
    replaced = plan_pipe(resource, resource.spec, observed, NO_SECRETS, ids=IDS, replace=True)
    assert replaced.operation == Op.REPLACE and not replaced.errors
    assert [(r.method, r.purpose) for r in replaced.requests] == [
        ("DELETE", Purpose.DELETE_FOR_REPLACE),
        ("POST", Purpose.CREATE),
    ]
    body = {k: v for k, v in resource.spec.items() if k not in IDS}
    assert replaced.requests[1].body == body
    assert "ingestion stops and restarts" in replaced.warnings[0]
    assert "consumer group offsets" in replaced.warnings[0]


@pytest.mark.parametrize(
    ("live", "error", "message"),
    [
        pytest.param(
            None, "GET pipe: 503 UNAVAILABLE", "GET pipe: 503 UNAVAILABLE", id="fetch-error"
        ),
        pytest.param(None, None, "live pipe not found", id="nothing-fetched"),
        pytest.param(KAFKA_LIVE, "boom", "boom", id="error-wins-over-live"),
    ],
)
def test_plan_should_turn_a_fetch_error_into_an_error_action(
    live: Any, error: str | None, message: str
) -> None:
    action = plan_for({"name": "x"}, live, error=error)
    assert (action.operation, action.errors, action.requests) == (Op.ERROR, (message,), ())
    assert action.target == IDS
    assert action.location == Location("m.yaml", 4, 1)


def test_plan_every_pipe_action_and_change_carries_a_location() -> None:
    locator = LineLocator(
        {
            ("metadata", "name"): 4,
            ("spec", "name"): 9,
            ("spec", "settings", "engine_max_threads"): 14,
        }
    )
    resource = Resource(
        "Pipe",
        "orders",
        {**IDS, "name": "n2", "settings": {"engine_max_threads": 1}},
        "m.yaml",
        locator=locator,
    )
    action = plan_pipe(
        resource, resource.spec, Observed(KAFKA_LIVE, path=PIPE_PATH), NO_SECRETS, ids=IDS
    )
    assert action.location == Location("m.yaml", 4, 1)
    assert {c.dotted: c.location.line for c in action.changes} == {
        "name": 9,
        "settings.engine_max_threads": 14,
    }


# -- organizations ----------------------------------------------------------------------------

PE1 = {"id": "pe-1", "description": "one"}
PE2 = {"id": "pe-2", "description": "two"}
PE3 = {"id": "pe-3", "description": "three"}
ORG_LIVE = {"id": "org-1", "name": "Acme", "enableCoreDumps": False, "privateEndpoints": [PE1, PE2]}


def org_action(spec: Mapping[str, Any], observed: Observed | None = None) -> Action:
    resource = Resource(
        "Organization", "acme", {"organizationId": "org-1", **spec}, "o.yaml", locator=LOCATOR
    )
    return plan_organization(resource, observed or Observed(ORG_LIVE, path=ORG_PATH), "org-1")


ORG_BODY_CASES = [
    pytest.param({"name": "Acme"}, [], id="no-change-no-request"),
    pytest.param({"name": "Acme 2"}, [({"name": "Acme 2"}, True)], id="name-is-idempotent"),
    pytest.param(
        {"privateEndpoints": [PE1, PE2, PE3]},
        [({"privateEndpoints": {"add": [PE3]}}, False)],
        id="endpoint-add",
    ),
    pytest.param(
        {"privateEndpoints": [PE2]},
        [({"privateEndpoints": {"remove": [PE1]}}, False)],
        id="endpoint-remove",
    ),
    pytest.param(
        {"name": "B", "privateEndpoints": [PE1, PE3]},
        [({"name": "B", "privateEndpoints": {"add": [PE3], "remove": [PE2]}}, False)],
        id="name-add-and-remove-of-different-ids-in-one-patch",
    ),
    pytest.param(
        {"name": "B", "privateEndpoints": [PE1, {"id": "pe-2", "description": "TWO"}]},
        [
            ({"name": "B", "privateEndpoints": {"remove": [PE2]}}, False),
            ({"privateEndpoints": {"add": [{"id": "pe-2", "description": "TWO"}]}}, False),
        ],
        id="description-change-is-remove-patch-then-add-patch",
    ),
    pytest.param(
        {"enableCoreDumps": True},
        [({"enableCoreDumps": True}, True)],
        id="core-dumps-switched-on-is-idempotent",
    ),
    pytest.param({"enableCoreDumps": False}, [], id="core-dumps-unchanged-no-request"),
]


@pytest.mark.parametrize(("spec", "expected"), ORG_BODY_CASES)
def test_plan_organization_sends_minimal_bodies(spec: dict[str, Any], expected: list[Any]) -> None:
    action = org_action(spec)
    assert [(r.body, r.idempotent) for r in action.requests] == expected
    assert all((r.method, r.path) == ("PATCH", ORG_PATH) for r in action.requests)
    assert action.operation == (Op.UPDATE if expected else Op.NOOP)
    assert action.target == {"organizationId": "org-1"}


def test_plan_organization_reports_fetch_error_and_notes() -> None:
    failed = org_action({"name": "x"}, Observed(error="403 FORBIDDEN"))
    assert (failed.operation, failed.errors) == (Op.ERROR, ("403 FORBIDDEN",))
    noted = org_action({"name": "x"}, Observed(ORG_LIVE, path=ORG_PATH, note="read from state"))
    assert noted.warnings == ("read from state",)
    assert noted.basis == {"name": "Acme"}


# -- dashboards -------------------------------------------------------------------------------

TILE = {"x": 0, "y": 0, "w": 6, "h": 4}
DASH_SPEC = {"name": "Ops", "tiles": [TILE], "tags": ["prod"]}
DASH_HASH = content_hash(DASH_SPEC)
LIVE_DASH = {"id": "d-1", "name": "Ops", "tiles": [{**TILE, "id": "t-1"}], "tags": ["prod"]}


def dash(
    spec: Mapping[str, Any] = DASH_SPEC,
    live: Mapping[str, Any] | None = None,
    record: DashboardRecord | None = None,
    *,
    can_read: bool = True,
    can_update: bool = True,
    replace: bool = False,
) -> Action:
    resource = Resource("Dashboard", "ops", spec, "d.yaml", locator=LOCATOR)
    return plan_dashboard(
        resource, live, record, can_read=can_read, can_update=can_update, replace=replace
    )


def test_plan_dashboard_creates_when_the_list_shows_none() -> None:
    action = dash()
    assert action.operation == Op.CREATE
    (request,) = action.requests
    assert (request.method, request.path, request.body, request.interface) == (
        "POST",
        "/api/v2/dashboards",
        DASH_SPEC,
        DASHBOARDS,
    )
    assert request.idempotent is False
    assert action.content_hash == DASH_HASH
    assert [c.dotted for c in action.changes] == ["name", "tiles", "tags"]


def test_plan_dashboard_recreates_a_recorded_dashboard_gone_from_the_server() -> None:
    action = dash(record=DashboardRecord("d-0", DASH_HASH, created_by_us=True))
    assert action.operation == Op.CREATE
    assert action.warnings == (
        "dashboard d-0 recorded in state no longer exists on the server; creating it again",
    )


def test_plan_dashboard_adopts_an_equal_live_dashboard_by_name() -> None:
    action = dash(live=LIVE_DASH)
    assert (action.operation, action.requests, action.target) == (
        Op.NOOP,
        (),
        {"id": "d-1", "name": "Ops"},
    )
    assert action.warnings == ()


def test_plan_dashboard_updates_a_changed_dashboard_with_put() -> None:
    spec = {**DASH_SPEC, "tags": ["prod", "eu"]}
    action = dash(spec, live=LIVE_DASH, record=DashboardRecord("d-1", DASH_HASH))
    assert action.operation == Op.UPDATE
    assert [(r.method, r.path, r.body, r.idempotent) for r in action.requests] == [
        ("PUT", "/api/v2/dashboards/d-1", spec, True)
    ]
    assert [c.dotted for c in action.changes] == ["tags"]
    assert action.warnings == ()


def test_plan_dashboard_reports_server_side_drift() -> None:
    live = {**LIVE_DASH, "tags": ["edited-in-ui"]}
    action = dash(live=live, record=DashboardRecord("d-1", DASH_HASH))
    assert action.operation == Op.UPDATE
    assert action.warnings == ("changed on the server since the last apply (server-side drift)",)


def test_plan_dashboard_without_put_reports_not_updatable() -> None:
    action = dash({**DASH_SPEC, "tags": []}, live=LIVE_DASH, can_update=False)
    assert action.operation == Op.NOOP
    assert action.requests == ()
    assert any("not updatable through this API" in w for w in action.warnings)


def test_plan_dashboard_without_list_creates_once_and_records_nothing_new() -> None:
    action = dash(can_read=False, can_update=False)
    assert action.operation == Op.CREATE
    assert [r.method for r in action.requests] == ["POST"]


def test_plan_dashboard_without_list_leaves_an_unchanged_recorded_dashboard() -> None:
    action = dash(record=DashboardRecord("d-1", DASH_HASH, True), can_read=False, can_update=False)
    assert (action.operation, action.requests, action.warnings) == (Op.NOOP, (), ())
    assert action.target == {"id": "d-1", "name": "Ops"}


def test_plan_dashboard_without_list_warns_a_changed_one_is_not_updatable() -> None:
    record = DashboardRecord("d-1", content_hash({"name": "Ops"}), True)
    action = dash(record=record, can_read=False, can_update=False)
    assert (action.operation, action.requests) == (Op.NOOP, ())
    (warning,) = action.warnings
    assert "not updatable through this API" in warning
    assert "--replace" in warning


def test_plan_dashboard_with_replace_posts_a_new_one_and_says_the_old_stays() -> None:
    record = DashboardRecord("d-1", content_hash({"name": "Ops"}), True)
    action = dash(record=record, can_read=False, can_update=False, replace=True)
    assert action.operation == Op.REPLACE
    assert [(r.method, r.body) for r in action.requests] == [("POST", DASH_SPEC)]
    assert action.warnings == ("creates a new dashboard; the old one (d-1) is left in place",)
    assert action.has_changes


def test_plan_dashboard_with_an_uncertain_create_is_an_error() -> None:
    record = DashboardRecord(None, DASH_HASH, uncertain=True)
    action = dash(record=record, can_read=False, can_update=False)
    assert action.operation == Op.ERROR
    assert action.requests == ()
    assert "--replace" in action.errors[0]
    assert "may have succeeded" in action.errors[0]


def test_plan_dashboard_with_an_uncertain_create_and_replace_creates() -> None:
    record = DashboardRecord(None, DASH_HASH, uncertain=True)
    action = dash(record=record, can_read=False, can_update=False, replace=True)
    assert action.operation == Op.CREATE
    assert action.errors == ()


# -- prune ------------------------------------------------------------------------------------


def test_plan_prune_deletes_a_dashboard_this_tool_created() -> None:
    where = Location(".reconcile/state.json")
    action = plan_prune("old", DashboardRecord("d-9", "h", True), can_delete=True, location=where)
    assert action.operation == Op.DELETE
    assert [(r.method, r.path, r.body, r.interface) for r in action.requests] == [
        ("DELETE", "/api/v2/dashboards/d-9", None, DASHBOARDS)
    ]
    assert [(c.kind, c.old, c.new, c.location) for c in action.changes] == [
        (ChangeKind.REMOVE, "d-9", MISSING, where)
    ]


@pytest.mark.parametrize(
    ("record", "can_delete"),
    [
        pytest.param(DashboardRecord("d-9", "h", True), False, id="no-delete-endpoint"),
        pytest.param(DashboardRecord(None, "h", True), True, id="no-recorded-id"),
    ],
)
def test_plan_prune_leaves_in_place_what_it_cannot_delete(
    record: DashboardRecord, can_delete: bool
) -> None:
    action = plan_prune("old", record, can_delete=can_delete, location=Location("s.json"))
    assert (action.operation, action.requests) == (Op.NOOP, ())
    assert action.warnings == ("manifest removed, but the server offers no DELETE; left in place",)


# -- summary ----------------------------------------------------------------------------------


def test_plan_summary_counts_actions_by_outcome() -> None:
    where = Location("m.yaml", 1, 1)
    noop_warned = Action("Dashboard", "w", Op.NOOP, where, warnings=("x",))
    actions = (
        dash(),
        plan_for({"name": "n"}, KAFKA_LIVE),
        plan_for({"name": "m"}, KAFKA_LIVE),
        dash(record=DashboardRecord("d", "h"), can_read=False, can_update=False, replace=True),
        plan_prune("p", DashboardRecord("d", "h", True), can_delete=True, location=where),
        plan_for({"name": "orders"}, KAFKA_LIVE),
        noop_warned,
        error_action("Pipe", "bad", where, "no such pipe"),
    )
    plan = Plan(actions)
    assert plan.summary() == {
        "create": 1,
        "update": 2,
        "replace": 1,
        "delete": 1,
        "rename": 0,
        "unchanged": 2,
        "warnings": 1,
        "errors": 1,
    }
    assert len(plan.changed) == 5
    assert [a.name for a in plan.failed] == ["bad"]


def test_plan_summary_counts_a_pending_rename_as_a_rename_not_unchanged() -> None:
    # Apply moves the state record of a renamed dashboard: a change, which
    # --detailed-exitcode (2) and apply's "1 applied" already count.
    record = DashboardRecord("d-1", DASH_HASH, created_by_us=True)
    moved = dataclasses.replace(dash(live=LIVE_DASH, record=record), renamed_from="old-ops")
    moved_and_changed = dataclasses.replace(
        dash({**DASH_SPEC, "tags": ["dev"]}, LIVE_DASH, record), renamed_from="older"
    )
    plan = Plan((moved, moved_and_changed, dash(live=LIVE_DASH, record=record)))
    assert moved.renames_only and not moved_and_changed.renames_only
    assert plan.summary() == {
        "create": 0,
        "update": 1,
        "replace": 0,
        "delete": 0,
        "rename": 1,
        "unchanged": 1,
        "warnings": 0,
        "errors": 0,
    }
    assert plan.changed == (moved, moved_and_changed)


def test_error_action_only_reports_its_message() -> None:
    action = error_action("Pipe", "p", Location("m.yaml", 2, 1), "oops", {"pipeId": "x"})
    assert (action.operation, action.errors, action.requests, action.key) == (
        Op.ERROR,
        ("oops",),
        (),
        "Pipe/p",
    )
    assert action.target == {"pipeId": "x"}


# -- unconverged (apply's pure check) -----------------------------------------------------------


def test_unconverged_is_empty_when_live_shows_every_planned_change() -> None:
    action = plan_for({"settings": {"engine_max_threads": 8}}, KAFKA_LIVE)
    after = {
        **KAFKA_LIVE,
        "settings": {"streaming_max_insert_wait_ms": 5000, "engine_max_threads": 8.0},
    }
    assert unconverged(action, after) == []


def test_unconverged_names_a_setting_the_server_did_not_take() -> None:
    action = plan_for({"settings": {"engine_max_threads": 8}}, KAFKA_LIVE)
    assert unconverged(action, KAFKA_LIVE) == [
        "settings.engine_max_threads is 4 after the write, expected 8"
    ]


def test_unconverged_checks_table_mappings_added_removed_and_replaced() -> None:
    new_b = tm("b", excludedColumns=["y"])
    action = plan_for(pg_spec([new_b, tm("c")]), pg_live([tm("a"), tm("b")]))
    assert unconverged(action, pg_live([new_b, tm("c")])) == []
    assert unconverged(action, pg_live([tm("a"), tm("b")])) == [
        "table mapping public.a → a is still present",
        "table mapping public.b → b is missing after the write",
        "table mapping public.c → c is missing after the write",
    ]


def test_unconverged_checks_organization_endpoints_and_name() -> None:
    action = org_action({"name": "B", "privateEndpoints": [PE1, {**PE2, "description": "TWO"}]})
    good = {"name": "B", "privateEndpoints": [PE1, {**PE2, "description": "TWO"}]}
    assert unconverged(action, good) == []
    bad = {"name": "Acme", "privateEndpoints": [PE1, PE2, PE3]}
    assert unconverged(action, bad) == [
        "name is 'Acme' after the write",
        "private endpoint pe-2 is missing after the write",
    ]


def test_unconverged_checks_dashboard_fields() -> None:
    action = dash({**DASH_SPEC, "tags": ["x"]}, live=LIVE_DASH)
    assert unconverged(action, {**LIVE_DASH, "tags": ["x"]}) == []
    assert unconverged(action, LIVE_DASH) == ["tags is ['prod'] after the write, expected ['x']"]


def test_unconverged_names_the_field_inside_a_dashboard_tile_and_both_values() -> None:
    wider = {**TILE, "w": 8}
    action = dash({**DASH_SPEC, "tiles": [wider]}, live=LIVE_DASH)
    # The tile's server-assigned id is not stated in the manifest: no difference.
    assert unconverged(action, {**LIVE_DASH, "tiles": [{**wider, "id": "t-1"}]}) == []
    assert unconverged(action, LIVE_DASH) == ["tiles[0].w is 6 after the write, expected 8"]


def test_field_change_kinds_in_a_plan_are_those_the_plan_schema_documents() -> None:
    schema = json.loads((Path(__file__).parent.parent / "schemas" / "plan.schema.json").read_text())
    documented = set(schema["$defs"]["change"]["properties"]["kind"]["enum"])
    assert {k.value for k in ChangeKind} == documented
    change = FieldChange(("name",), "a", "b", ChangeKind.SET, Location("m.yaml", 1, 1))
    assert change.dotted == "name"
