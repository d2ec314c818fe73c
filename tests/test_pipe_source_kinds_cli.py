"""Every source kind of the contract through the real command line against the emulator: the
example pipe of each kind beyond kafka, object storage, kinesis and postgres (mysql, mongodb,
bigquery, pubsub) is created, stopped, started and planned to no changes; its writable fields
are updated with what the kind's update body requires; table mappings of the database kinds
are a full desired set; its secrets never show; a create-time change needs a replacement; a
pipe whose manifest is gone is pruned; ``explain`` documents each kind."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.support.cli import SECRET_ENV, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import ORG_ID

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "examples" / "sources"
KINDS = ("mysql", "mongodb", "bigquery", "pubsub")
_yaml = YAML()


def _copy(tmp_path: Path, kind: str) -> Path:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "schemas").exists() or shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    target = tmp_path / "m" / f"{kind}.yaml"
    shutil.copy2(SOURCES / f"{kind}.yaml", target)
    return target


def _edit(path: Path, **spec: Any) -> None:
    doc = _yaml.load(path)
    for key, value in spec.items():
        doc["spec"][key] = value
    _yaml.dump(doc, path)


def _args(command: str, tmp_path: Path, *extra: str) -> list[str]:
    args = [command, str(tmp_path / "m"), "--state", str(tmp_path / "s.json"), *extra]
    return [*args, "--auto-approve"] if command == "apply" else args


def _plan_code(emulator: Emulator, tmp_path: Path) -> int:
    planned = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), emulator.env())
    assert planned.exit_code in (0, 2), planned.output
    return planned.exit_code


def _pipe(emulator: Emulator, name: str) -> dict[str, Any]:
    found = [p for p in emulator.data()["pipes"].values() if p["name"] == name]
    assert len(found) == 1, found
    pipe: dict[str, Any] = found[0]
    return pipe


def _no_secret(text: str) -> None:
    leaked = [k for k, v in SECRET_ENV.items() if v in text]
    assert leaked == [], leaked


@pytest.mark.parametrize("kind", KINDS)
def test_a_pipe_of_each_new_source_kind_is_created_stopped_started_and_converges(
    emulator: Emulator, tmp_path: Path, kind: str
) -> None:
    manifest = _copy(tmp_path, kind)
    name = _yaml.load(manifest)["metadata"]["name"]
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    assert planned.exit_code == 0, planned.output
    assert "Plan: 1 to create" in planned.stdout
    _no_secret(planned.output)
    created = run_cli(_args("apply", tmp_path), emulator.env())
    assert created.exit_code == 0, created.output
    _no_secret(created.output)
    live = _pipe(emulator, name)
    assert list(live["source"]) == [kind]
    assert live["state"] == "Running"
    assert _plan_code(emulator, tmp_path) == 0

    _edit(manifest, state="Stopped")
    stopped = run_cli(_args("apply", tmp_path), emulator.env())
    assert stopped.exit_code == 0, stopped.output
    # A database pipe pauses; a pubsub pipe stops.
    assert _pipe(emulator, name)["state"] == ("Stopped" if kind == "pubsub" else "Paused")
    assert _plan_code(emulator, tmp_path) == 0

    _edit(manifest, state="Running")
    started = run_cli(_args("apply", tmp_path), emulator.env())
    assert started.exit_code == 0, started.output
    assert _pipe(emulator, name)["state"] == "Running"
    assert _plan_code(emulator, tmp_path) == 0
    assert [w["method"] for w in writes(emulator.requests())] == ["POST", "PATCH", "PATCH"]


def _source(path: Path) -> dict[str, Any]:
    doc = _yaml.load(path)
    kind = next(iter(doc["spec"]["source"]))
    source: dict[str, Any] = doc["spec"]["source"][kind]
    return source


def _set_source(path: Path, **fields: Any) -> None:
    doc = _yaml.load(path)
    kind = next(iter(doc["spec"]["source"]))
    doc["spec"]["source"][kind].update(fields)
    _yaml.dump(doc, path)


def _created(emulator: Emulator, tmp_path: Path, kind: str) -> Path:
    manifest = _copy(tmp_path, kind)
    created = run_cli(_args("apply", tmp_path), emulator.env())
    assert created.exit_code == 0, created.output
    return manifest


@pytest.mark.parametrize(
    ("kind", "fields", "sent"),
    [
        # The update body of each kind requires some members: sent though unchanged.
        (
            "mysql",
            {"settings": {"replicationMode": "cdc", "syncIntervalSeconds": 90}},
            {"host", "port", "settings"},
        ),
        ("mongodb", {"readPreference": "nearest"}, {"uri", "readPreference"}),
        ("pubsub", {"ackDeadline": 120}, {"authentication", "serviceAccountKey", "ackDeadline"}),
    ],
)
def test_an_update_of_a_source_sends_what_its_kind_requires_and_converges(
    emulator: Emulator, tmp_path: Path, kind: str, fields: dict[str, Any], sent: set[str]
) -> None:
    manifest = _created(emulator, tmp_path, kind)
    _set_source(manifest, **fields)
    updated = run_cli(_args("apply", tmp_path), emulator.env())
    assert updated.exit_code == 0, updated.output
    _no_secret(updated.output)
    patch = writes(emulator.requests())[-1]
    assert patch["method"] == "PATCH" and not patch["path"].endswith(("/state", "/scaling"))
    assert set(patch["body"]["source"][kind]) == sent
    assert _plan_code(emulator, tmp_path) == 0


@pytest.mark.parametrize(
    ("kind", "added"),
    [
        ("mysql", {"sourceSchemaName": "shop", "sourceTable": "refunds", "targetTable": "refunds"}),
        (
            "mongodb",
            {"sourceDatabaseName": "catalog", "sourceCollection": "stock", "targetTable": "stock"},
        ),
    ],
)
def test_table_mappings_of_a_database_source_are_a_full_set_edited_while_paused(
    emulator: Emulator, tmp_path: Path, kind: str, added: dict[str, str]
) -> None:
    manifest = _created(emulator, tmp_path, kind)
    mappings = _source(manifest)["tableMappings"]
    _set_source(manifest, tableMappings=[mappings[0], added])  # one dropped, one added
    planned = run_cli(_args("plan", tmp_path), emulator.env())
    lines = [line.rsplit("[", 1)[-1] for line in planned.stdout.splitlines() if "→ PATCH" in line]
    assert lines == ["state command: stop]", "update]", "state command: start]"], planned.stdout
    applied = run_cli(_args("apply", tmp_path), emulator.env())
    assert applied.exit_code == 0, applied.output
    live = _pipe(emulator, _yaml.load(manifest)["metadata"]["name"])
    assert [m["targetTable"] for m in live["source"][kind]["tableMappings"]] == [
        mappings[0]["targetTable"],
        added["targetTable"],
    ]
    assert live["state"] == "Running"
    edit = [w for w in writes(emulator.requests()) if "tableMappingsToAdd" in str(w["body"])]
    assert edit and {"tableMappingsToAdd", "tableMappingsToRemove"} <= set(
        edit[0]["body"]["source"][kind]
    )
    assert _plan_code(emulator, tmp_path) == 0


def test_bigquery_table_mappings_are_create_time_and_need_a_replacement(
    emulator: Emulator, tmp_path: Path
) -> None:
    manifest = _created(emulator, tmp_path, "bigquery")
    old = _pipe(emulator, "marketing-bigquery")["id"]
    mappings = _source(manifest)["tableMappings"]
    more = {"sourceDatasetName": "marketing", "sourceTable": "spend", "targetTable": "spend"}
    _set_source(manifest, tableMappings=[*mappings, more])
    refused = run_cli(_args("plan", tmp_path), emulator.env())
    assert refused.exit_code == 1, refused.output
    assert "source.bigquery.tableMappings" in refused.output and "--replace" in refused.output
    replaced = run_cli(_args("apply", tmp_path, "--replace"), emulator.env())
    assert replaced.exit_code == 0, replaced.output
    new = _pipe(emulator, "marketing-bigquery")
    assert new["id"] != old and len(new["source"]["bigquery"]["tableMappings"]) == 2
    assert _plan_code(emulator, tmp_path) == 0


@pytest.mark.parametrize("kind", ["mysql", "pubsub"])
def test_a_rotated_secret_of_a_new_kind_is_sent_once_by_fingerprint(
    emulator: Emulator, tmp_path: Path, kind: str
) -> None:
    _created(emulator, tmp_path, kind)
    variable = "MYSQL_PASSWORD" if kind == "mysql" else "PUBSUB_SERVICE_ACCOUNT"
    env = {**emulator.env(), variable: "rotated-SECRETVALUE-99"}
    planned = run_cli(_args("plan", tmp_path), env)
    assert "(sensitive value changed)" in planned.stdout, planned.output
    assert "rotated-SECRETVALUE-99" not in planned.output
    assert run_cli(_args("apply", tmp_path), env).exit_code == 0
    again = run_cli(_args("plan", tmp_path, "--detailed-exitcode"), env)
    assert again.exit_code == 0, again.output


def test_a_removed_manifest_of_a_new_kind_is_pruned(emulator: Emulator, tmp_path: Path) -> None:
    manifest = _created(emulator, tmp_path, "mongodb")
    pipe_id = _pipe(emulator, "catalog-mongodb")["id"]
    manifest.unlink()
    write_manifest(tmp_path / "m" / "org.yaml", "Organization", "acme", {"organizationId": ORG_ID})
    pruned = run_cli(_args("apply", tmp_path, "--prune"), emulator.env())
    assert pruned.exit_code == 0, pruned.output
    assert pipe_id not in emulator.data()["pipes"]
    assert _plan_code(emulator, tmp_path) == 0


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("source.mysql.tableMappings", "FULL desired set"),
        ("source.mongodb.uri", "requires it there"),
        ("source.bigquery", "create-time"),
        ("source.pubsub.serviceAccountKey", "Service account key"),
    ],
)
def test_explain_documents_each_new_source_kind(field: str, words: str) -> None:
    explained = run_cli(["explain", f"Pipe.spec.{field}"], {})
    assert explained.exit_code == 0, explained.output
    assert words in explained.stdout


def _all_created(emulator: Emulator, tmp_path: Path) -> None:
    for kind in KINDS:
        _copy(tmp_path, kind)
    created = run_cli(_args("apply", tmp_path), emulator.env())
    assert created.exit_code == 0, created.output


def test_get_pipes_summarises_each_new_source_kind(emulator: Emulator, tmp_path: Path) -> None:
    _all_created(emulator, tmp_path)
    listed = run_cli(["get", "pipes", "--service", "analytics"], emulator.env())
    assert listed.exit_code == 0, listed.output
    for summary in (
        "mysql shop.cluster-abc.us-east-1.rds.amazonaws.com:3306 (2 tables)",
        "mongodb mongodb+srv://catalog.abcde.mongodb.net (2 collections)",
        "shop.*",
        "bigquery gs://marketing-staging/snapshots/ (1 tables)",
        "pubsub clicks (web-analytics)",
    ):
        assert summary in listed.stdout, listed.stdout
    _no_secret(listed.output)


@pytest.mark.parametrize("by_name", [False, True])
def test_exported_pipes_of_the_new_kinds_validate_and_plan_to_no_changes(
    emulator: Emulator, tmp_path: Path, by_name: bool
) -> None:
    _all_created(emulator, tmp_path)
    out = tmp_path / "out"
    extra = ["--by-name"] if by_name else []
    exported = run_cli(
        ["export", "--service", "analytics", "--dir", str(out), *extra], emulator.env()
    )
    assert exported.exit_code == 0, exported.output
    names = {_yaml.load(p)["metadata"]["name"]: p for p in out.rglob("*.yaml")}
    files = [
        names[n] for n in ("shop-mysql", "catalog-mongodb", "marketing-bigquery", "clicks-pubsub")
    ]
    for path in files:
        text = path.read_text(encoding="utf-8")
        _no_secret(text)
        assert "fromEnv" in text  # the write-only secret is hinted as a reference to add
    if by_name:
        # Bound by name to the pipes the state records: plan with the same state.
        plan = run_cli(
            ["plan", *map(str, files), "--state", str(tmp_path / "s.json"), "--detailed-exitcode"],
            emulator.env(),
        )
    else:
        plan = run_cli(["plan", *map(str, files), "--detailed-exitcode"], emulator.env())
    assert plan.exit_code == 0, plan.output
