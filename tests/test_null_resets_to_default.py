"""``null`` in a manifest resets a field to the service's default: validated against the
schema, planned as a reset (sent as null, shown as a reset), converged when the live value is
the default; the schema's defaults are the emulator's, and apply round-trips end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from reconciler.apply.verify import unconverged
from reconciler.emulator import Identities, create_app
from reconciler.load.schema import reset_defaults
from reconciler.model.fields import PATCH_REQUIRES, is_secret_path
from reconciler.plan.actions import Op
from reconciler.plan.diff import ChangeKind
from reconciler.plan.lifecycle import CREATE_FIELDS
from reconciler.plan.render import describe_change
from tests.support.cli import SECRET_ENV, pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.emulator_app import AUTH, ORG, Client, ok, patch, pipe_url
from tests.support.plan_inputs import KAFKA_LIVE, plan_for
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, OBJECT_STORAGE_PIPE, POSTGRES_PAUSED_PIPE

SEED_PIPE = {
    "kafka": KAFKA_PIPE,
    "objectStorage": OBJECT_STORAGE_PIPE,
    "postgres": POSTGRES_PAUSED_PIPE,
}
# The source kinds the seed has no pipe of: a pipe is created from the shipped example first.
EXAMPLE_SOURCES = Path(__file__).resolve().parent.parent / "examples" / "sources"
# Write-only secrets accept null too, but are never shown: their reset is not readable.
READABLE_DEFAULTS = sorted(p for p in reset_defaults() if not is_secret_path(p))


def test_null_setting_plans_a_reset_sent_as_null() -> None:
    action = plan_for({"settings": {"engine_max_threads": None}}, KAFKA_LIVE)
    (change,) = action.changes
    assert change.kind is ChangeKind.RESET and change.old == 4 and change.new == 0
    assert [r.body for r in action.requests] == [{"settings": {"engine_max_threads": None}}]
    assert describe_change(change)[1] == "settings.engine_max_threads: 4 → reset to default (0)"


def test_null_is_converged_when_the_live_value_is_the_default() -> None:
    live = {**KAFKA_LIVE, "settings": {"engine_max_threads": 0}}
    assert plan_for({"settings": {"engine_max_threads": None}}, live).operation is Op.NOOP
    unset = {"source": {"kafka": {"caCertificate": None}}}
    assert plan_for(unset, KAFKA_LIVE).operation is Op.NOOP  # absent live value: unset
    with_ca = {**KAFKA_LIVE, "source": {"kafka": {"caCertificate": "PEM"}}}
    action = plan_for(unset, with_ca)
    assert [r.body for r in action.requests] == [{"source": {"kafka": {"caCertificate": None}}}]


def test_apply_checks_a_reset_against_the_default() -> None:
    action = plan_for({"settings": {"engine_max_threads": None}}, KAFKA_LIVE)
    assert unconverged(action, {"settings": {"engine_max_threads": 0}}) == []
    assert unconverged(action, {"settings": {"engine_max_threads": 4}}) != []


def test_null_is_refused_where_the_service_has_no_default(tmp_path: Path) -> None:
    write_manifest(tmp_path / "m.yaml", "Pipe", "p", pipe_spec(name=None, settings={"x": 1}))
    result = run_cli(["validate", str(tmp_path / "m.yaml")], {})
    assert result.exit_code == 1 and "spec.name: expected a string, got null" in result.output


def _revealed(tree: Any) -> Any:
    if isinstance(tree, dict):
        if "fromEnv" in tree:
            return SECRET_ENV[tree["fromEnv"]]
        return {k: _revealed(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_revealed(v) for v in tree]
    return tree


def _example_pipe(client: Client, kind: str) -> tuple[str, dict[str, Any]]:
    """Create the example pipe of ``kind``; return its id and what every update must carry."""
    spec = YAML(typ="safe").load(EXAMPLE_SOURCES / f"{kind}.yaml")["spec"]
    body = {k: _revealed(v) for k, v in spec.items() if k in CREATE_FIELDS}
    created = ok(client.post(f"{ORG}/services/{ANALYTICS}/pipes", json=body))
    source = body["source"][kind]
    required = {name: source[name] for name in PATCH_REQUIRES.get(kind, ()) if name in source}
    return str(created["id"]), required


def _at(tree: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


@pytest.mark.parametrize("path", READABLE_DEFAULTS, ids=str)
def test_schema_default_is_what_the_emulator_applies_on_null(path: tuple[Any, ...]) -> None:
    kind = path[1] if path[0] == "source" else "kafka"
    body: dict[str, Any] = {}
    node = body
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = None
    with Client(create_app(identities=Identities.from_env({})), auth=AUTH) as client:
        pipe_id = SEED_PIPE.get(str(kind))
        if pipe_id is None:
            pipe_id, required = _example_pipe(client, str(kind))
            body["source"][kind] = {**required, **body["source"][kind]}
        if path[0] == "scaling":  # written through the pipe's scaling endpoint
            answer = ok(client.patch(f"{pipe_url(pipe_id)}/scaling", json=body["scaling"]))
        else:
            answer = ok(patch(client, pipe_id, body))
        assert ok(client.get(pipe_url(pipe_id))) == answer
    assert _at(answer, path) == reset_defaults()[path], path


def test_apply_resets_a_field_end_to_end_and_then_converges(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(settings={"engine_max_threads": None, "streaming_max_insert_wait_ms": 5000})
    spec["source"] = {"kafka": {"iamRole": None}}
    write_manifest(tmp_path / "m" / "k.yaml", "Pipe", "orders", spec)
    args = [str(tmp_path / "m"), "--state", str(tmp_path / "s.json")]
    plan = run_cli(["plan", *args], emulator.env())
    assert "settings.engine_max_threads: 4 → reset to default (0)" in plan.output
    assert run_cli(["apply", *args, "--auto-approve"], emulator.env()).exit_code == 0
    (sent,) = [w["body"] for w in writes(emulator.requests())]
    assert sent == {
        "settings": {"engine_max_threads": None},
        "source": {"kafka": {"iamRole": None}},
    }
    again = run_cli(["plan", *args, "--detailed-exitcode"], emulator.env())
    assert again.exit_code == 0, again.output
    assert emulator.data()["pipes"][KAFKA_PIPE]["settings"]["engine_max_threads"] == 0


def test_null_clears_a_write_only_secret_once_and_then_converges(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = pipe_spec(OBJECT_STORAGE_PIPE, source={"objectStorage": {"accessKey": None}})
    write_manifest(tmp_path / "m" / "s.yaml", "Pipe", "events", spec)
    args = [str(tmp_path / "m"), "--state", str(tmp_path / "s.json")]
    plan = run_cli(["plan", *args], emulator.env())
    assert "source.objectStorage.accessKey: reset to default (unset)" in plan.output
    assert run_cli(["apply", *args, "--auto-approve"], emulator.env()).exit_code == 0
    (sent,) = [w["body"] for w in writes(emulator.requests())]
    assert sent == {"source": {"objectStorage": {"accessKey": None}}}
    again = run_cli(["plan", *args, "--detailed-exitcode"], emulator.env())
    assert again.exit_code == 0, again.output


def test_a_literal_secret_where_null_is_also_allowed_is_still_refused_unechoed(
    tmp_path: Path,
) -> None:
    source = {"objectStorage": {"connectionString": "AccountKey=hunter2"}}
    write_manifest(tmp_path / "m.yaml", "Pipe", "p", pipe_spec(OBJECT_STORAGE_PIPE, source=source))
    result = run_cli(["validate", str(tmp_path / "m.yaml")], {})
    assert result.exit_code == 1 and "hunter2" not in result.output
    assert "spec.source.objectStorage.connectionString: is a secret" in result.output
