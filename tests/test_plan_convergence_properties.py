"""Property tests (hypothesis) of the plan: for random desired/live pipes and organizations,
applying the planned request bodies in order on a small merge-patch server model and planning
again gives no changes (convergence), and every request body holds only changed fields."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.apply.verify import unconverged
from reconciler.client.live import Observed
from reconciler.model.json import as_items, as_mapping
from reconciler.model.resources import JsonPath, Resource
from reconciler.model.schematree import node_at
from reconciler.model.secrets import SECRET_FIELDS, Secret, fingerprint, reveal
from reconciler.plan.actions import Action, Op
from reconciler.plan.diff import MISSING, ChangeKind, SecretCheck, mapping_key, same
from reconciler.plan.planners import plan_organization, plan_pipe

KEY = b"k" * 32
IDS = {"organizationId": "org-1", "serviceId": "svc-1", "pipeId": "pipe-1"}
PIPE_PATH = "/v1/organizations/org-1/services/svc-1/pipes/pipe-1"
ORG_PATH = "/v1/organizations/org-1"
PIPE_SCHEMA = "pipe.schema.json"
TABLE_MAPPINGS = ("source", "postgres", "tableMappings")
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# The settings and their bounds as the pipe schema states them (``test_schema_files`` holds
# the schema to the service's bounds); values drawn from a few points each so that desired
# and live often agree (no change) and often differ, and integral floats stand in for ints.
_SETTINGS = {
    n: as_mapping(f) for n, f in node_at(PIPE_SCHEMA, "/$defs/settings/properties")[0].items()
}


def _typed(kind: str) -> dict[str, Mapping[str, Any]]:
    """The settings whose schema type is ``kind`` (alone or with null)."""
    return {
        n: f
        for n, f in _SETTINGS.items()
        if kind in as_items(f.get("type")) or f.get("type") == kind
    }


INT_SETTINGS = {
    n: (int(str(f["minimum"])), int(str(f["maximum"]))) for n, f in _typed("integer").items()
}
BOOL_SETTINGS = tuple(_typed("boolean"))


def int_value(lo: int, hi: int) -> st.SearchStrategy[int | float]:
    point = st.sampled_from(sorted({lo, lo + 1, (lo + hi) // 2, hi}))
    return st.one_of(point, point.map(float))


def pipe_settings() -> st.SearchStrategy[dict[str, Any]]:
    optional: dict[str, st.SearchStrategy[Any]] = {
        k: int_value(lo, hi) for k, (lo, hi) in INT_SETTINGS.items()
    }
    optional.update({k: st.booleans() for k in BOOL_SETTINGS})
    return st.fixed_dictionaries({}, optional=optional)


FIELDS = ("id", "total", "ts")
columns = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(FIELDS), "type": st.sampled_from(["UInt64", "String"])}
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda c: c["name"],
)


def field_mappings(cols: list[dict[str, Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Mappings the service accepts: every column of ``cols`` mapped once, in any order."""
    names = [c["name"] for c in cols]
    return st.permutations(names).flatmap(
        lambda order: st.lists(
            st.sampled_from(FIELDS), min_size=len(order), max_size=len(order)
        ).map(
            lambda sources: [
                {"sourceField": s, "destinationField": d}
                for s, d in zip(sources, order, strict=True)
            ]
        )
    )


endpoint_ids = st.lists(st.sampled_from(["e1", "e2", "e3"]), max_size=3)
password = st.sampled_from(["pw-1", "pw-2"])


def table_mapping() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "sourceSchemaName": st.sampled_from(["public", "sales"]),
            "sourceTable": st.sampled_from(["a", "b", "c"]),
            "targetTable": st.sampled_from(["a", "b", "x"]),
        },
        optional={
            "excludedColumns": st.sampled_from([[], ["pii"], ["pii", "ssn"]]),
            "useCustomSortingKey": st.booleans(),
            "tableEngine": st.sampled_from(["MergeTree", "ReplacingMergeTree"]),
        },
    )


table_mappings = st.lists(table_mapping(), max_size=5, unique_by=mapping_key)


@st.composite
def kafka_pair(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    live_columns = draw(columns)
    live: dict[str, Any] = {
        "id": "pipe-1",
        "name": draw(st.sampled_from(["orders", "orders-v2"])),
        "state": "Running",
        "createdAt": "2024-01-01T00:00:00Z",
        "source": {
            "kafka": {
                "brokers": "b-1:9092",
                "topics": "orders",
                "format": "JSONEachRow",
                "reversePrivateEndpointIds": draw(endpoint_ids),
                "iamRole": draw(st.sampled_from(["arn:a", "arn:b"])),
            }
        },
        "destination": {"database": "default", "table": "orders", "columns": live_columns},
        "fieldMappings": draw(field_mappings(live_columns)),
        "settings": draw(pipe_settings()),
    }
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["name"] = draw(st.sampled_from(["orders", "orders-v2"]))
    if draw(st.booleans()):
        spec["settings"] = draw(pipe_settings())
    final_columns = live_columns
    if draw(st.booleans()):
        final_columns = draw(columns)
        spec["destination"] = {"table": "orders", "columns": final_columns}
    # New columns need their mappings in the same manifest (the service's fieldMappings rule).
    if final_columns != live_columns or draw(st.booleans()):
        spec["fieldMappings"] = draw(field_mappings(final_columns))
    kafka: dict[str, Any] = {}
    if draw(st.booleans()):
        kafka["reversePrivateEndpointIds"] = draw(endpoint_ids)
    if draw(st.booleans()):
        kafka["iamRole"] = draw(st.sampled_from(["arn:a", "arn:b"]))
    if draw(st.booleans()):
        kafka["brokers"] = "b-1:9092"  # a met expectation
    recorded: dict[str, str] = {}
    if draw(st.booleans()):
        kafka["credentials"] = {"username": Secret("svc"), "password": Secret(draw(password))}
        known = draw(st.sampled_from([None, "pw-1", "pw-2"]))
        if known is not None:
            recorded["source.kafka.credentials"] = fingerprint(
                KEY, {"username": Secret("svc"), "password": Secret(known)}
            )
    if bool(kafka) or draw(st.booleans()):
        spec["source"] = {"kafka": kafka}
        if draw(st.booleans()):
            spec["source"]["validateSamples"] = draw(st.booleans())
    return spec, live, recorded


@st.composite
def postgres_pair(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    live: dict[str, Any] = {
        "id": "pipe-1",
        "name": "cdc",
        "state": "Paused",
        "source": {
            "postgres": {
                "host": "db-1",
                "port": 5432,
                "database": "app",
                "settings": {
                    "syncIntervalSeconds": draw(st.sampled_from([10, 60])),
                    "pullBatchSize": draw(st.sampled_from([1000, 5000])),
                    "publicationName": "pub",
                },
                "tableMappings": draw(table_mappings),
            }
        },
        "settings": draw(pipe_settings()),
    }
    postgres: dict[str, Any] = {"tableMappings": draw(table_mappings)}
    if draw(st.booleans()):
        postgres["host"] = draw(st.sampled_from(["db-1", "db-2"]))
    if draw(st.booleans()):
        postgres["settings"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "syncIntervalSeconds": st.sampled_from([10, 60, 60.0]),
                    "pullBatchSize": st.sampled_from([1000, 5000]),
                    "publicationName": st.just("pub"),
                },
            )
        )
    recorded: dict[str, str] = {}
    if draw(st.booleans()):
        postgres["credentials"] = {"username": Secret("app"), "password": Secret(draw(password))}
    spec: dict[str, Any] = {"source": {"postgres": postgres}}
    if draw(st.booleans()):
        spec["source"]["validateSamples"] = True
    if draw(st.booleans()):
        spec["settings"] = draw(pipe_settings())
    return spec, live, recorded


# -- the server model -------------------------------------------------------------------------


class PipeServer:
    """A minimal model of the pipe PATCH: merge-patch objects, arrays replaced, table mappings
    removed then added (never the same table in one request), write-only secrets kept apart."""

    def __init__(self, live: Mapping[str, Any]) -> None:
        self.live = copy.deepcopy(dict(live))
        self.secrets: dict[JsonPath, Any] = {}

    def patch(self, body: Mapping[str, Any]) -> None:
        body = copy.deepcopy(reveal(body))
        source = body.get("source", {})
        source.pop("validateSamples", None)
        postgres = source.get("postgres", {})
        removes = postgres.pop("tableMappingsToRemove", [])
        adds = postgres.pop("tableMappingsToAdd", [])
        for kind, subs in SECRET_FIELDS.items():
            for sub in subs:
                parent = source.get(kind, {})
                for key in sub[:-1]:
                    parent = parent.get(key, {}) if isinstance(parent, dict) else {}
                if isinstance(parent, dict) and sub[-1] in parent:
                    self.secrets[("source", kind, *sub)] = parent.pop(sub[-1])
        removed_tables = {mapping_key(r)[:2] for r in removes}
        assert not removed_tables & {mapping_key(a)[:2] for a in adds}, (
            "the service rejects adding and removing the same table in one request"
        )
        if removes or adds:
            assert self.live["state"] == "Paused", "Postgres pipe must be paused to edit"
        merge(self.live, body)
        mappings = self.live.get("source", {}).get("postgres", {}).get("tableMappings")
        for item in removes:
            assert set(item) <= {"sourceSchemaName", "sourceTable", "targetTable"}
            keys = [mapping_key(m) for m in mappings]
            assert mapping_key(item) in keys, f"removing an absent mapping {item}"
            del mappings[keys.index(mapping_key(item))]
        for item in adds:
            assert mapping_key(item) not in {mapping_key(m) for m in mappings}, "duplicate add"
            mappings.append(item)


def merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class OrgServer:
    """A model of the organization PATCH: name set, endpoints removed by id then added."""

    def __init__(self, live: Mapping[str, Any]) -> None:
        self.live = copy.deepcopy(dict(live))

    def patch(self, body: Mapping[str, Any]) -> None:
        if "name" in body:
            self.live["name"] = body["name"]
        endpoints = body.get("privateEndpoints", {})
        current = self.live.setdefault("privateEndpoints", [])
        for item in endpoints.get("remove", []):
            ids = [e["id"] for e in current]
            assert item["id"] in ids, f"removing an absent endpoint {item}"
            del current[ids.index(item["id"])]
        for item in endpoints.get("add", []):
            assert item["id"] not in {e["id"] for e in current}, "duplicate endpoint"
            current.append(dict(item))


# -- helpers ----------------------------------------------------------------------------------


def pipe_resource(spec: Mapping[str, Any]) -> Resource:
    return Resource("Pipe", "p", {**IDS, **spec}, "m.yaml")


def plan(spec: Mapping[str, Any], live: Mapping[str, Any], recorded: Mapping[str, str]) -> Action:
    resource = pipe_resource(spec)
    return plan_pipe(
        resource, resource.spec, Observed(live, path=PIPE_PATH), SecretCheck(KEY, recorded), ids=IDS
    )


def value_at(tree: Any, path: JsonPath) -> Any:
    for part in path:
        if not isinstance(tree, Mapping) or part not in tree:
            return MISSING
        tree = tree[part]
    return tree


def assert_only_changed_fields(action: Action, live: Mapping[str, Any]) -> None:
    """Every leaf of every body is a planned change whose value differs from live."""
    written = {c.path for c in action.changes if c.kind in (ChangeKind.SET, ChangeKind.SENSITIVE)}
    seen: list[JsonPath] = []
    removes: list[Any] = []
    adds: list[Any] = []

    def walk(node: Any, path: JsonPath) -> None:
        if path in written:
            seen.append(path)
            if path not in {c.path for c in action.changes if c.kind is ChangeKind.SENSITIVE}:
                assert not same(node, value_at(live, path)), f"unchanged {path} sent"
            return
        if path == ("source", "validateSamples"):
            return
        if path == (*TABLE_MAPPINGS[:2], "tableMappingsToRemove"):
            removes.extend(node)
            return
        if path == (*TABLE_MAPPINGS[:2], "tableMappingsToAdd"):
            adds.extend(node)
            return
        assert isinstance(node, Mapping) and node, f"{path} in a body without a change"
        for key, value in node.items():
            walk(value, (*path, key))

    for request in action.requests:
        assert request.body is not None
        walk(request.body, ())
    assert sorted(seen) == sorted(written), "each written change is sent exactly once"
    planned_removes = [c.old for c in action.changes if c.kind is ChangeKind.REMOVE]
    planned_adds = [c.new for c in action.changes if c.kind is ChangeKind.ADD]
    assert sorted(map(mapping_key, removes)) == sorted(map(mapping_key, planned_removes))
    assert adds == planned_adds


def converge(spec: dict[str, Any], live: dict[str, Any], recorded: dict[str, str]) -> None:
    first = plan(spec, live, recorded)
    assert first.errors == (), first.errors
    assert_only_changed_fields(first, live)
    server = PipeServer(live)
    for request in first.requests:
        assert (request.method, request.path) == ("PATCH", PIPE_PATH)
        assert request.body is not None
        server.patch(request.body)
    assert unconverged(first, server.live) == []
    second = plan(spec, server.live, {**recorded, **first.secrets})
    assert second.changes == ()
    assert second.requests == ()
    assert second.operation == Op.NOOP
    if not first.requests:
        assert server.live == live


# -- properties -------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(kafka_pair())
def test_kafka_pipe_plan_converges_and_sends_only_changes(
    pair: tuple[dict[str, Any], dict[str, Any], dict[str, str]],
) -> None:
    converge(*pair)


@PROPERTY_SETTINGS
@given(postgres_pair())
def test_postgres_pipe_plan_converges_and_sends_only_changes(
    pair: tuple[dict[str, Any], dict[str, Any], dict[str, str]],
) -> None:
    converge(*pair)


@PROPERTY_SETTINGS
@given(postgres_pair())
def test_postgres_mapping_requests_never_remove_and_add_one_table_together(
    pair: tuple[dict[str, Any], dict[str, Any], dict[str, str]],
) -> None:
    action = plan(*pair)
    for request in action.requests:
        assert request.body is not None
        postgres = request.body.get("source", {}).get("postgres", {})
        removed = {mapping_key(m)[:2] for m in postgres.get("tableMappingsToRemove", [])}
        added = {mapping_key(m)[:2] for m in postgres.get("tableMappingsToAdd", [])}
        assert not removed & added
        if removed or added:
            assert request.idempotent is False
    purposes = [r.purpose for r in action.requests]
    assert purposes in ([], ["update"], ["remove table mappings", "add table mappings"])


ENDPOINT_IDS = ["pe-1", "pe-2", "pe-3", "pe-4"]
desired_endpoints = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(ENDPOINT_IDS)},
        optional={"description": st.sampled_from(["", "a", "b"])},
    ),
    max_size=4,
    unique_by=lambda e: e["id"],
)
live_endpoints = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(ENDPOINT_IDS), "description": st.sampled_from(["", "a", "b"])}
    ),
    max_size=4,
    unique_by=lambda e: e["id"],
)


@PROPERTY_SETTINGS
@given(
    desired=st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["Acme", "Acme Inc"]),
            "privateEndpoints": desired_endpoints,
        },
    ),
    live_name=st.sampled_from(["Acme", "Acme Inc"]),
    live_eps=live_endpoints,
)
def test_organization_plan_converges_and_sends_only_changes(
    desired: dict[str, Any], live_name: str, live_eps: list[dict[str, Any]]
) -> None:
    live = {"id": "org-1", "name": live_name, "privateEndpoints": live_eps}
    resource = Resource("Organization", "acme", {"organizationId": "org-1", **desired}, "o.yaml")
    first = plan_organization(resource, Observed(live, path=ORG_PATH), "org-1")
    assert first.errors == ()
    server = OrgServer(live)
    for request in first.requests:
        assert request.body is not None
        assert set(request.body) <= {"name", "privateEndpoints"}
        if "name" in request.body:
            assert request.body["name"] != live_name
        server.patch(request.body)
    sent_ids = [
        e["id"]
        for r in first.requests
        for side in ("add", "remove")
        for e in (r.body or {}).get("privateEndpoints", {}).get(side, [])
    ]
    changed_ids = [str(c.path[-1]) for c in first.changes if c.kind is not ChangeKind.SET]
    assert sorted(sent_ids) == sorted(changed_ids)
    assert unconverged(first, server.live) == []
    second = plan_organization(resource, Observed(server.live, path=ORG_PATH), "org-1")
    assert (second.changes, second.requests, second.operation) == ((), (), Op.NOOP)
