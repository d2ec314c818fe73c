"""Convergence as a property against the real emulator: random manifests (settings, table
mappings, private endpoints, run states and scaling), apply, plan again."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.cli import pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec
from tests.support.seed_ids import (
    KAFKA_PIPE,
    ORG_ID,
    POSTGRES_PAUSED_PIPE,
    POSTGRES_RUNNING_PIPE,
    STAGING,
)

SETTINGS = {
    "streaming_max_insert_wait_ms": st.integers(500, 60000),
    "engine_max_threads": st.integers(0, 64),
    "engine_max_insert_threads": st.integers(0, 16),
    "engine_parallel_view_processing": st.booleans(),
}
TABLES = ["customers", "addresses", "orders", "invoices"]

settings_subset = st.dictionaries(st.sampled_from(sorted(SETTINGS)), st.none(), min_size=1).flatmap(
    lambda keys: st.fixed_dictionaries({k: SETTINGS[k] for k in keys})
)
mappings = st.lists(
    st.builds(
        lambda table, excluded: {
            "sourceSchemaName": "public",
            "sourceTable": table,
            "targetTable": table,
            "excludedColumns": excluded,
        },
        st.sampled_from(TABLES),
        st.lists(st.sampled_from(["ssn", "dob", "email"]), unique=True, max_size=2),
    ),
    unique_by=lambda m: m["sourceTable"],
    max_size=3,
)
run_states = st.sampled_from([None, "Running", "Stopped"])
SCALING = {
    "replicas": st.integers(1, 40),
    "replicaCpuMillicores": st.integers(125, 2000),
    "replicaMemoryGb": st.sampled_from([0.5, 1, 2, 4.5, 8]),
    "concurrency": st.integers(0, 34),
}
scaling_subset = st.dictionaries(st.sampled_from(sorted(SCALING)), st.none(), max_size=3).flatmap(
    lambda keys: st.fixed_dictionaries({k: SCALING[k] for k in keys})
)


def _with(spec: dict[str, Any], state: str | None, scaling: dict[str, Any]) -> dict[str, Any]:
    return {
        **spec,
        **({"state": state} if state else {}),
        **({"scaling": scaling} if scaling else {}),
    }


endpoints = st.lists(
    st.builds(
        lambda i, d: {"id": f"pe-{i}", "description": d},
        st.integers(0, 4),
        st.sampled_from(["a", "b"]),
    ),
    unique_by=lambda e: e["id"],
    max_size=3,
)


def _leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    return [path]


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


@pytest.mark.slow
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kafka_settings=settings_subset,
    tables=mappings,
    running_tables=mappings,
    org_endpoints=endpoints,
    states=st.tuples(run_states, run_states, run_states),
    scaling=scaling_subset,
)
def test_apply_then_plan_should_converge_and_send_only_changed_fields(
    emulator: Emulator,
    tmp_path_factory: pytest.TempPathFactory,
    kafka_settings: dict[str, Any],
    tables: list[dict[str, Any]],
    running_tables: list[dict[str, Any]],
    org_endpoints: list[dict[str, Any]],
    states: tuple[str | None, str | None, str | None],
    scaling: dict[str, Any],
) -> None:
    emulator.reset()
    emulator.configure(transitionMs=20)
    root = tmp_path_factory.mktemp("prop")
    kafka = pipe_spec(KAFKA_PIPE, settings=kafka_settings)
    write_manifest(root / "k.yaml", "Pipe", "k", _with(kafka, states[0], scaling))
    postgres = {"source": {"postgres": {"tableMappings": tables}}}
    write_manifest(
        root / "p.yaml",
        "Pipe",
        "p",
        _with(pipe_spec(POSTGRES_PAUSED_PIPE, **postgres), states[1], {}),
    )
    # A running postgres pipe: a mapping edit is stop → edit → start (or stop → edit).
    running = pipe_spec(
        POSTGRES_RUNNING_PIPE, STAGING, source={"postgres": {"tableMappings": running_tables}}
    )
    write_manifest(root / "r.yaml", "Pipe", "r", _with(running, states[2], {}))
    write_manifest(
        root / "o.yaml",
        "Organization",
        "o",
        {"organizationId": ORG_ID, "privateEndpoints": org_endpoints},
    )
    before = emulator.data()
    state = root / "state.json"
    result = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    again = run_cli(
        ["plan", str(root), "--detailed-exitcode", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert again.exit_code == 0, again.stdout
    # Every settings leaf sent to the kafka pipe differed from its live value before.
    pipes = before["pipes"]
    sent = writes(emulator.requests())
    assert len([r for r in sent if r["path"].endswith("/scaling")]) == (
        1 if any(scaling[k] != pipes[KAFKA_PIPE]["scaling"][k] for k in scaling) else 0
    )
    for request in writes(emulator.requests()):
        if request["path"].endswith(KAFKA_PIPE):
            for path in _leaves(request["body"]):
                assert _at(request["body"], path) != _at(pipes[KAFKA_PIPE], path), path
        if request["path"].endswith(f"{KAFKA_PIPE}/scaling"):
            # One scaling request, of the fields that differed.
            for key, value in request["body"].items():
                assert value != pipes[KAFKA_PIPE]["scaling"][key], key


@pytest.mark.slow
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pipe_settings=settings_subset,
    topic=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
    format_=st.sampled_from(["JSONEachRow", "Avro"]),
    strategy=st.sampled_from(["from_beginning", "from_latest"]),
    columns=st.lists(st.sampled_from(["id", "amount", "note"]), min_size=1, unique=True),
)
def test_apply_then_plan_should_converge_for_pipes_it_creates(
    emulator: Emulator,
    tmp_path_factory: pytest.TempPathFactory,
    pipe_settings: dict[str, Any],
    topic: str,
    format_: str,
    strategy: str,
    columns: list[str],
) -> None:
    emulator.reset()
    root = tmp_path_factory.mktemp("create")
    spec = kafka_spec(name=f"p-{topic}", topics=topic, settings=pipe_settings)
    spec["source"]["kafka"] |= {"format": format_, "offset": {"strategy": strategy}}
    spec["destination"]["columns"] = [{"name": c, "type": "String"} for c in columns]
    spec["fieldMappings"] = [{"sourceField": c, "destinationField": c} for c in columns]
    write_manifest(root / "new.yaml", "Pipe", "new", spec)
    state = root / "state.json"
    args = ["--state", str(state), "--rate", "none"]
    result = run_cli(["apply", str(root), "--auto-approve", *args], emulator.env())
    assert result.exit_code == 0, result.output
    again = run_cli(["plan", str(root), "--detailed-exitcode", *args], emulator.env())
    assert again.exit_code == 0, again.stdout
    created = [p for p in emulator.data()["pipes"].values() if p["name"] == f"p-{topic}"]
    assert len(created) == 1
