"""Convergence as a property against the real emulator: random manifests, apply, plan again."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import pipe_spec, run_cli, write_manifest, writes
from tests.conftest import Emulator
from tests.seed_ids import KAFKA_PIPE, ORG_ID, POSTGRES_PAUSED_PIPE

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
@given(kafka_settings=settings_subset, tables=mappings, org_endpoints=endpoints)
def test_apply_then_plan_should_converge_and_send_only_changed_fields(
    emulator: Emulator,
    tmp_path_factory: pytest.TempPathFactory,
    kafka_settings: dict[str, Any],
    tables: list[dict[str, Any]],
    org_endpoints: list[dict[str, Any]],
) -> None:
    emulator.reset()
    root = tmp_path_factory.mktemp("prop")
    write_manifest(root / "k.yaml", "Pipe", "k", pipe_spec(KAFKA_PIPE, settings=kafka_settings))
    write_manifest(
        root / "p.yaml",
        "Pipe",
        "p",
        pipe_spec(POSTGRES_PAUSED_PIPE, source={"postgres": {"tableMappings": tables}}),
    )
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
    for request in writes(emulator.requests()):
        if request["path"].endswith(KAFKA_PIPE):
            for path in _leaves(request["body"]):
                assert _at(request["body"], path) != _at(pipes[KAFKA_PIPE], path), path


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
    from tests.test_pipe_lifecycle import kafka_spec

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
