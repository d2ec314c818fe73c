"""Pure diff rules: managed fields, number/bool/null semantics, arrays, table mappings, secrets,
expectations, organizations and dashboards (``reconciler.plan.diff``, ``reconciler.plan.pipediff``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from reconciler.model.errors import Location
from reconciler.model.resources import FixedLocator, PathPart, Resource
from reconciler.model.secrets import Secret, fingerprint
from reconciler.plan.diff import (
    MISSING,
    ChangeKind,
    FieldChange,
    SecretCheck,
    canonical,
    content_hash,
    diff_dashboard,
    diff_organization,
    project,
    same,
)
from reconciler.plan.pipediff import diff_pipe
from tests.support.plan_inputs import KEY, NO_SECRETS, LineLocator

IDENTITY = {"organizationId": "org-1", "serviceId": "svc-1", "pipeId": "pipe-1"}


def pipe(spec: Mapping[str, Any], locator: Any = None) -> Resource:
    return Resource(
        "Pipe",
        "orders",
        {**IDENTITY, **spec},
        "m.yaml",
        locator=locator or FixedLocator(Location("m.yaml", 3, 5)),
    )


def summarize(changes: list[FieldChange]) -> list[tuple[tuple[PathPart, ...], Any, Any, str]]:
    return [(c.path, c.old, c.new, c.kind.value) for c in changes]


def pipe_changes(
    spec: Mapping[str, Any], live: Mapping[str, Any], secrets: SecretCheck = NO_SECRETS
) -> list[tuple[tuple[PathPart, ...], Any, Any, str]]:
    resource = pipe(spec)
    return summarize(diff_pipe(resource, resource.spec, live, secrets))


LIVE_KAFKA: dict[str, Any] = {
    "id": "pipe-1",
    "name": "orders",
    "state": "Running",
    "createdAt": "2024-01-01T00:00:00Z",
    "source": {
        "kafka": {
            "brokers": "b-1:9092",
            "topics": "orders",
            "format": "JSONEachRow",
            "iamRole": None,
            "reversePrivateEndpointIds": ["e1", "e2"],
        }
    },
    "destination": {
        "database": "default",
        "table": "orders",
        "managedTable": True,
        "columns": [{"name": "id", "type": "UInt64"}, {"name": "total", "type": "Float64"}],
    },
    "fieldMappings": [
        {"sourceField": "id", "destinationField": "id"},
        {"sourceField": "total", "destinationField": "total"},
    ],
    "settings": {
        "streaming_max_insert_wait_ms": 5000,
        "engine_max_threads": 4,
        "object_storage_use_cluster_function": False,
    },
    "scaling": {"replicas": 2, "replicaCpuMillicores": 500, "replicaMemoryGb": 2.0},
}

SET, EXPECT, REPLACE = "set", "expectation", "replace"

PIPE_CASES = [
    pytest.param(
        {"settings": {"engine_max_threads": 4}}, [], id="unstated-live-fields-are-ignored"
    ),
    pytest.param({}, [], id="empty-spec-manages-nothing"),
    pytest.param(
        {"settings": {"streaming_max_insert_wait_ms": 5000.0}},
        [],
        id="5000-equals-5000.0-no-change",
    ),
    pytest.param(
        {"scaling": {"replicaMemoryGb": 2}},
        [],
        id="integral-desired-equals-float-live",
    ),
    pytest.param(
        {"settings": {"object_storage_use_cluster_function": 0}},
        [(("settings", "object_storage_use_cluster_function"), False, 0, SET)],
        id="int-0-vs-bool-false-is-a-change",
    ),
    pytest.param(
        {"settings": {"engine_max_threads": True}},
        [(("settings", "engine_max_threads"), 4, True, SET)],
        id="bool-true-vs-int-is-a-change",
    ),
    pytest.param(
        {"settings": {"engine_max_threads": 4, "streaming_max_insert_wait_ms": 5000}},
        [],
        id="key-order-is-irrelevant",
    ),
    pytest.param(
        {"source": {"kafka": {"iamRole": "arn:role"}}},
        [(("source", "kafka", "iamRole"), None, "arn:role", SET)],
        id="live-null-vs-stated-value-is-a-change-with-old-null",
    ),
    pytest.param(
        {"source": {"kafka": {"caCertificate": "PEM"}}},
        [(("source", "kafka", "caCertificate"), MISSING, "PEM", SET)],
        id="live-absent-vs-stated-value-is-a-change-with-old-absent",
    ),
    pytest.param(
        {"settings": {"engine_max_threads": 8, "streaming_max_insert_wait_ms": 5000}},
        [(("settings", "engine_max_threads"), 4, 8, SET)],
        id="nested-objects-are-compared-leaf-by-leaf",
    ),
    pytest.param(
        {"settings": {"engine_max_insert_threads": 2}},
        [(("settings", "engine_max_insert_threads"), MISSING, 2, SET)],
        id="new-leaf-in-existing-object-is-a-single-leaf-change",
    ),
    pytest.param(
        {"name": "orders-v2"},
        [(("name",), "orders", "orders-v2", SET)],
        id="top-level-scalar-change",
    ),
    pytest.param(
        {"fieldMappings": [{"sourceField": "id", "destinationField": "order_id"}]},
        [
            (
                ("fieldMappings",),
                LIVE_KAFKA["fieldMappings"],
                [{"sourceField": "id", "destinationField": "order_id"}],
                SET,
            )
        ],
        id="fieldMappings-array-is-replaced-whole",
    ),
    pytest.param(
        {"fieldMappings": LIVE_KAFKA["fieldMappings"][::-1]},
        [(("fieldMappings",), LIVE_KAFKA["fieldMappings"], LIVE_KAFKA["fieldMappings"][::-1], SET)],
        id="array-order-matters",
    ),
    pytest.param(
        {"fieldMappings": [{"sourceField": "id"}, {"sourceField": "total"}]},
        [],
        id="array-items-compared-on-the-keys-they-state",
    ),
    pytest.param(
        {"destination": {"columns": [{"name": "id", "type": "String"}]}},
        [
            (
                ("destination", "columns"),
                LIVE_KAFKA["destination"]["columns"],
                [{"name": "id", "type": "String"}],
                SET,
            )
        ],
        id="destination-columns-array-is-replaced-whole",
    ),
    pytest.param(
        {"source": {"kafka": {"reversePrivateEndpointIds": ["e1"]}}},
        [(("source", "kafka", "reversePrivateEndpointIds"), ["e1", "e2"], ["e1"], SET)],
        id="reversePrivateEndpointIds-array-is-replaced-whole",
    ),
    pytest.param(
        {"source": {"kafka": {"brokers": "b-2:9092"}}},
        [(("source", "kafka", "brokers"), "b-1:9092", "b-2:9092", REPLACE)],
        id="kafka-brokers-differing-needs-a-replacement",
    ),
    pytest.param(
        {"source": {"kafka": {"brokers": "b-1:9092", "topics": "orders"}}},
        [],
        id="met-expectations-are-no-change",
    ),
    pytest.param(
        {"destination": {"table": "orders_v2", "database": "default"}},
        [(("destination", "table"), "orders", "orders_v2", REPLACE)],
        id="destination-table-differing-needs-a-replacement",
    ),
    pytest.param(
        {"state": "Paused"},
        [(("state",), "Running", "Paused", EXPECT)],
        id="state-differing-is-an-expectation",
    ),
    pytest.param(
        {"scaling": {"replicas": 3}},
        [(("scaling", "replicas"), 2, 3, EXPECT)],
        id="scaling-differing-is-an-expectation",
    ),
    pytest.param(
        {"source": {"validateSamples": True}},
        [],
        id="validateSamples-is-request-only-and-never-compared",
    ),
    pytest.param(
        {"settings": {"engine_max_threads": 8}, "name": "orders"},
        [(("settings", "engine_max_threads"), 4, 8, SET)],
        id="identity-fields-are-not-managed",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), PIPE_CASES)
def test_diff_pipe_field_rules(spec: dict[str, Any], expected: list[Any]) -> None:
    assert pipe_changes(spec, LIVE_KAFKA) == expected


def test_diff_pipe_should_replace_object_when_live_value_is_not_an_object() -> None:
    live = {**LIVE_KAFKA, "settings": None}
    assert pipe_changes({"settings": {"engine_max_threads": 4}}, live) == [
        (("settings",), None, {"engine_max_threads": 4}, SET)
    ]


def test_diff_pipe_should_descend_into_objects_absent_from_live() -> None:
    live = {k: v for k, v in LIVE_KAFKA.items() if k != "settings"}
    assert pipe_changes({"settings": {"engine_max_threads": 4}}, live) == [
        (("settings", "engine_max_threads"), MISSING, 4, SET)
    ]


# -- postgres table mappings -----------------------------------------------------------------


def tm(schema: str, table: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"sourceSchemaName": schema, "sourceTable": table, "targetTable": target, **extra}


def pg_live(mappings: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    return {
        "name": "cdc",
        "state": "Paused",
        "source": {
            "postgres": {
                "host": "db",
                "port": 5432,
                "database": "app",
                "settings": {"syncIntervalSeconds": 10, "publicationName": "pub", **settings},
                "tableMappings": mappings,
            }
        },
    }


def pg_spec(mappings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"source": {"postgres": {"tableMappings": mappings}}}


A, B, C = tm("public", "a", "a"), tm("public", "b", "b"), tm("public", "c", "c")
TM = ("source", "postgres", "tableMappings")

MAPPING_CASES = [
    pytest.param([A, B], [A, B], [], id="same-set-no-change"),
    pytest.param([B, A], [A, B], [], id="set-order-is-irrelevant"),
    pytest.param(
        [A, B, C],
        [A, B],
        [((*TM, "public.c → c"), MISSING, C, "add")],
        id="new-mapping-is-an-add",
    ),
    pytest.param(
        [A],
        [A, B],
        [((*TM, "public.b → b"), B, MISSING, "remove")],
        id="absent-mapping-is-a-remove",
    ),
    pytest.param(
        [A, tm("public", "b", "b", excludedColumns=["x"])],
        [A, tm("public", "b", "b", excludedColumns=[])],
        [
            ((*TM, "public.b → b"), tm("public", "b", "b", excludedColumns=[]), MISSING, "remove"),
            (
                (*TM, "public.b → b"),
                tm("public", "b", "b", excludedColumns=[]),
                tm("public", "b", "b", excludedColumns=["x"]),
                "add",
            ),
        ],
        id="changed-mapping-is-remove-then-add",
    ),
    pytest.param(
        [A, tm("public", "b", "b2")],
        [A, B],
        [
            ((*TM, "public.b → b"), B, MISSING, "remove"),
            ((*TM, "public.b → b2"), MISSING, tm("public", "b", "b2"), "add"),
        ],
        id="new-target-table-is-a-new-identity-removes-first",
    ),
    pytest.param(
        [A],
        [tm("public", "a", "a", useCustomSortingKey=False, excludedColumns=[])],
        [],
        id="unstated-mapping-fields-are-ignored",
    ),
    pytest.param(
        [A, B],
        [],
        [
            ((*TM, "public.a → a"), MISSING, A, "add"),
            ((*TM, "public.b → b"), MISSING, B, "add"),
        ],
        id="empty-live-set-adds-every-mapping",
    ),
]


@pytest.mark.parametrize(("desired", "live", "expected"), MAPPING_CASES)
def test_diff_pipe_table_mappings_are_a_set_keyed_by_schema_table_target(
    desired: list[dict[str, Any]], live: list[dict[str, Any]], expected: list[Any]
) -> None:
    assert pipe_changes(pg_spec(desired), pg_live(live)) == expected


def test_diff_pipe_postgres_settings_split_writable_from_create_time() -> None:
    spec = {
        "source": {"postgres": {"settings": {"syncIntervalSeconds": 30, "publicationName": "p2"}}}
    }
    assert pipe_changes(spec, pg_live([])) == [
        (("source", "postgres", "settings", "syncIntervalSeconds"), 10, 30, SET),
        (("source", "postgres", "settings", "publicationName"), "pub", "p2", REPLACE),
    ]


def test_diff_pipe_table_mapping_changes_are_located_at_their_manifest_item() -> None:
    locator = LineLocator(
        {("spec", *TM): 20, ("spec", *TM, 0): 21, ("spec", *TM, 1): 24, ("spec",): 5}, column=3
    )
    resource = pipe(pg_spec([A, C]), locator)
    changes = diff_pipe(resource, resource.spec, pg_live([A, B]), NO_SECRETS)
    by_kind = {c.kind: c.location.line for c in changes}
    assert by_kind == {ChangeKind.REMOVE: 20, ChangeKind.ADD: 24}


def test_diff_pipe_changes_carry_the_location_of_their_field() -> None:
    locator = LineLocator(
        {("spec", "settings"): 10, ("spec", "settings", "engine_max_threads"): 12}, column=3
    )
    resource = pipe({"settings": {"engine_max_threads": 9}}, locator)
    (change,) = diff_pipe(resource, resource.spec, LIVE_KAFKA, NO_SECRETS)
    assert change.location == Location("m.yaml", 12, 3)


# -- secrets ----------------------------------------------------------------------------------

CREDS = {"username": Secret("user"), "password": Secret("pw-1")}
CREDS_PATH = ("source", "kafka", "credentials")


@pytest.mark.parametrize(
    ("recorded", "key", "expect_change"),
    [
        pytest.param({}, KEY, True, id="no-recorded-fingerprint-is-a-sensitive-change"),
        pytest.param(
            {"source.kafka.credentials": fingerprint(KEY, CREDS)},
            KEY,
            False,
            id="same-fingerprint-is-no-change",
        ),
        pytest.param(
            {"source.kafka.credentials": fingerprint(KEY, {**CREDS, "password": Secret("pw-0")})},
            KEY,
            True,
            id="different-fingerprint-is-a-sensitive-change",
        ),
        pytest.param(
            {"source.kafka.credentials": fingerprint(b"other-key" * 4, CREDS)},
            KEY,
            True,
            id="fingerprint-under-another-key-is-a-sensitive-change",
        ),
        pytest.param(
            {"source.kafka.credentials": fingerprint(KEY, CREDS)},
            None,
            True,
            id="no-state-key-is-a-sensitive-change",
        ),
    ],
)
def test_diff_pipe_compares_secrets_by_fingerprint(
    recorded: dict[str, str], key: bytes | None, expect_change: bool
) -> None:
    spec = {"source": {"kafka": {"credentials": CREDS}}}
    got = pipe_changes(spec, LIVE_KAFKA, SecretCheck(key, recorded))
    expected = [(CREDS_PATH, MISSING, CREDS, "sensitive")] if expect_change else []
    assert got == expected


def test_diff_pipe_ignores_the_masked_live_value_of_a_secret() -> None:
    secret = Secret("DefaultEndpointsProtocol=https;AccountKey=abc")
    path = ("source", "objectStorage", "connectionString")
    live = {"source": {"objectStorage": {"connectionString": "***", "path": "x/*"}}}
    recorded = {"source.objectStorage.connectionString": fingerprint(KEY, secret)}
    spec = {"source": {"objectStorage": {"connectionString": secret, "path": "x/*"}}}
    assert pipe_changes(spec, live, SecretCheck(KEY, recorded)) == []
    assert pipe_changes(spec, live, SecretCheck(KEY, {})) == [(path, MISSING, secret, "sensitive")]


# -- organizations ----------------------------------------------------------------------------

LIVE_ORG = {
    "id": "org-1",
    "name": "Acme",
    "createdAt": "2024-01-01T00:00:00Z",
    "privateEndpoints": [
        {"id": "pe-1", "description": "one"},
        {"id": "pe-2", "description": "two"},
    ],
}


def org_changes(spec: Mapping[str, Any], live: Mapping[str, Any] = LIVE_ORG) -> list[Any]:
    resource = Resource("Organization", "acme", {"organizationId": "org-1", **spec}, "o.yaml")
    return summarize(diff_organization(resource, live))


PE1, PE2 = LIVE_ORG["privateEndpoints"]
PE3 = {"id": "pe-3", "description": "three"}
ORG_CASES = [
    pytest.param({}, [], id="nothing-stated-nothing-managed"),
    pytest.param({"name": "Acme"}, [], id="same-name-no-change"),
    pytest.param({"name": "Acme Inc"}, [(("name",), "Acme", "Acme Inc", SET)], id="name-change"),
    pytest.param({"privateEndpoints": [PE2, PE1]}, [], id="endpoint-order-is-irrelevant"),
    pytest.param(
        {"privateEndpoints": [{"id": "pe-1"}, {"id": "pe-2"}]},
        [],
        id="unstated-description-is-not-managed",
    ),
    pytest.param(
        {"privateEndpoints": [PE1, PE2, PE3]},
        [(("privateEndpoints", "pe-3"), MISSING, PE3, "add")],
        id="endpoint-add",
    ),
    pytest.param(
        {"privateEndpoints": [PE1]},
        [(("privateEndpoints", "pe-2"), PE2, MISSING, "remove")],
        id="endpoint-remove",
    ),
    pytest.param(
        {"privateEndpoints": []},
        [
            (("privateEndpoints", "pe-1"), PE1, MISSING, "remove"),
            (("privateEndpoints", "pe-2"), PE2, MISSING, "remove"),
        ],
        id="empty-desired-list-removes-all",
    ),
    pytest.param(
        {"privateEndpoints": [PE1, {"id": "pe-2", "description": "TWO"}]},
        [
            (("privateEndpoints", "pe-2"), PE2, MISSING, "remove"),
            (("privateEndpoints", "pe-2"), PE2, {"id": "pe-2", "description": "TWO"}, "add"),
        ],
        id="description-change-is-remove-then-add",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), ORG_CASES)
def test_diff_organization_rules(spec: dict[str, Any], expected: list[Any]) -> None:
    assert org_changes(spec) == expected


def test_diff_organization_treats_null_live_endpoints_as_empty() -> None:
    live = {"name": "Acme", "privateEndpoints": None}
    assert org_changes({"privateEndpoints": [PE1]}, live) == [
        (("privateEndpoints", "pe-1"), MISSING, PE1, "add")
    ]


# -- dashboards -------------------------------------------------------------------------------

TILE: dict[str, Any] = {
    "x": 0,
    "y": 0,
    "w": 6,
    "h": 4,
    "series": [{"type": "time", "dataSource": "events"}],
}
LIVE_DASH = {
    "id": "d-1",
    "name": "Ops",
    "tags": ["prod"],
    "tiles": [{**TILE, "id": "t-1", "series": [{**TILE["series"][0], "id": "s-1"}]}],
    "createdAt": "2024-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"name": "Ops", "tiles": [TILE], "tags": ["prod"]}, [], id="ids-are-ignored"),
        pytest.param({"name": "Ops"}, [], id="unstated-dashboard-fields-are-ignored"),
        pytest.param(
            {"name": "Ops", "tags": ["prod", "eu"]},
            [(("tags",), ["prod"], ["prod", "eu"], SET)],
            id="tags-change",
        ),
        pytest.param(
            {"name": "Ops", "tiles": [{**TILE, "w": 12}]},
            [(("tiles",), LIVE_DASH["tiles"], [{**TILE, "w": 12}], SET)],
            id="tiles-are-replaced-whole",
        ),
        pytest.param(
            {"name": "Ops", "tiles": [{**TILE, "w": 6.0}]},
            [],
            id="tile-numbers-compare-by-value",
        ),
    ],
)
def test_diff_dashboard_rules(spec: dict[str, Any], expected: list[Any]) -> None:
    resource = Resource("Dashboard", "ops", spec, "d.yaml")
    assert summarize(diff_dashboard(resource, LIVE_DASH)) == expected


# -- value helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("desired", "live", "expected"),
    [
        pytest.param(5000, 5000.0, True, id="int-equals-integral-float"),
        pytest.param(0.5, 0.5, True, id="floats-by-value"),
        pytest.param(True, 1, False, id="true-is-not-1"),
        pytest.param(1, True, False, id="1-is-not-true"),
        pytest.param(False, False, True, id="bools-by-value"),
        pytest.param(None, None, True, id="null-equals-null"),
        pytest.param(None, MISSING, False, id="null-is-not-absent"),
        pytest.param("5", 5, False, id="string-is-not-number"),
        pytest.param({"a": 1}, {"a": 1.0, "b": 2}, True, id="mapping-on-stated-keys"),
        pytest.param({"a": 1}, {"b": 1}, False, id="mapping-missing-key"),
        pytest.param([1, 2], [1, 2, 3], False, id="list-lengths-differ"),
        pytest.param([{"a": 1}], [{"a": 1, "id": "x"}], True, id="list-items-on-stated-keys"),
        pytest.param({"a": 1}, [1], False, id="mapping-vs-list"),
    ],
)
def test_same_compares_numbers_by_value_never_bools(
    desired: Any, live: Any, expected: bool
) -> None:
    assert same(desired, live) is expected


def test_canonical_turns_integral_floats_into_ints_and_keeps_bools() -> None:
    value = {"a": 5000.0, "b": [1.5, 2.0, True], "c": {"d": None, "e": "x"}}
    assert canonical(value) == {"a": 5000, "b": [1.5, 2, True], "c": {"d": None, "e": "x"}}
    assert isinstance(canonical(value)["a"], int)
    assert canonical(value)["b"][2] is True


def test_canonical_refuses_a_secret() -> None:
    with pytest.raises(TypeError):
        canonical({"password": Secret("x")})


def test_content_hash_ignores_key_order_and_number_formatting() -> None:
    one = content_hash({"name": "d", "tiles": [{"x": 0, "w": 6}]})
    two = content_hash({"tiles": [{"w": 6.0, "x": 0.0}], "name": "d"})
    assert one == two
    assert one.startswith("sha256:")
    assert content_hash({"name": "d", "tiles": [{"x": 1, "w": 6}]}) != one


def test_project_keeps_only_the_managed_part_of_live() -> None:
    shape = {"settings": {"engine_max_threads": 8}, "name": "x", "absent": 1}
    assert project(LIVE_KAFKA, shape) == {"settings": {"engine_max_threads": 4}, "name": "orders"}


def test_field_change_dotted_path_brackets_non_identifier_parts() -> None:
    loc = Location("m.yaml", 1, 1)
    change = FieldChange((*TM, "public.a → a"), MISSING, A, ChangeKind.ADD, loc)
    assert change.dotted == "source.postgres.tableMappings[public.a → a]"
    assert FieldChange(("settings", "engine_max_threads"), 1, 2, ChangeKind.SET, loc).dotted == (
        "settings.engine_max_threads"
    )


def test_missing_is_falsy_and_shows_as_absent() -> None:
    assert not MISSING
    assert repr(MISSING) == "<absent>"
