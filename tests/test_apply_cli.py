"""`reconcile apply` against the emulator on loopback: convergence, saved plans, partial failure,
faults, kills, locking, dashboards and secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from reconciler.state.local import locked_state
from tests.support.cli import (
    SECRET_ENV,
    TILE,
    UNPACED,
    apply_args,
    pipe_spec,
    plan_code,
    run_cli,
    scale_manifests,
    settle,
    write_manifest,
    writes,
)
from tests.support.emulator import Emulator
from tests.support.manifests import (
    EXAMPLES,
    EXAMPLES_APPLIED,
    SPEC_ONLY_EXAMPLES_APPLIED,
    example_copy,
)
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("spec_only", [False, True], ids=["extensions", "spec-only"])
def test_apply_then_plan_should_show_no_changes_for_every_kind(
    emulator: Emulator, tmp_path: Path, spec_only: bool
) -> None:
    emulator.configure(specOnly=spec_only)
    state = tmp_path / "state.json"
    # A spec-only server cannot create the example pipe that has no pipeId.
    examples = example_copy(tmp_path, can_create=not spec_only)
    # Without a dashboard list, a first run confirms that the state is meant to be new.
    first = ["--new-state"] if spec_only else []
    result = run_cli(apply_args([examples], state, *first), emulator.env())
    assert result.exit_code == 0, result.output
    done = SPEC_ONLY_EXAMPLES_APPLIED if spec_only else EXAMPLES_APPLIED
    assert f"Apply complete: {done}" in result.stdout
    code, out = plan_code(emulator, [examples], state)
    assert code == 0, out
    assert "No changes" in out
    # A third run writes nothing at all.
    before = len(writes(emulator.requests()))
    assert run_cli(apply_args([examples], state), emulator.env()).exit_code == 0
    assert len(writes(emulator.requests())) == before


def test_apply_should_refuse_without_tty_and_auto_approve(
    emulator: Emulator, tmp_path: Path
) -> None:
    result = run_cli(["apply", str(EXAMPLES), "--state", str(tmp_path / "s.json")], emulator.env())
    assert result.exit_code == 1
    assert "pass --auto-approve" in result.stderr
    assert writes(emulator.requests()) == []


def test_apply_plan_should_refuse_stale_actions_and_name_the_moved_field(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    write_manifest(
        tmp_path / "m" / "orders.yaml",
        "Pipe",
        "orders",
        pipe_spec(settings={"engine_max_threads": 8}),
    )
    write_manifest(
        tmp_path / "m" / "clickstream.yaml",
        "Pipe",
        "clickstream",
        pipe_spec(
            "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c63",
            "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a72",
            settings={"engine_max_threads": 3},
        ),
    )
    plan_file = tmp_path / "plan.json"
    assert (
        run_cli(
            ["plan", *UNPACED, str(tmp_path / "m"), "--out", str(plan_file), "--state", str(state)],
            emulator.env(),
        ).exit_code
        == 0
    )
    # Someone changes the live pipe after the plan was made.
    httpx.patch(
        f"{emulator.url}/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}",
        json={"settings": {"engine_max_threads": 6}},
        auth=(emulator.key_id, emulator.key_secret),
    ).raise_for_status()
    before = len(writes(emulator.requests()))
    result = run_cli(
        ["apply", *UNPACED, "--plan", str(plan_file), "--auto-approve", "--state", str(state)],
        emulator.env(),
    )
    assert result.exit_code == 1
    assert (
        "stale plan for pipe orders: settings.engine_max_threads changed from 4 to 6 since planning"
        in result.stderr
    )
    assert len(writes(emulator.requests())) == before  # nothing applied without --partial
    partial = run_cli(
        [
            "apply",
            *UNPACED,
            "--plan",
            str(plan_file),
            "--auto-approve",
            "--partial",
            "--state",
            str(state),
        ],
        emulator.env(),
    )
    assert partial.exit_code == 1
    assert "Pipe/clickstream: applied" in partial.stdout
    assert "Pipe/orders: stale" in partial.stdout


def test_apply_plan_should_resolve_secrets_again_and_refuse_a_changed_one(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    plan_file = tmp_path / "plan.json"
    assert (
        run_cli(
            ["plan", *UNPACED, str(EXAMPLES), "--out", str(plan_file), "--state", str(state)],
            emulator.env(),
        ).exit_code
        == 0
    )
    env = {**emulator.env(), "KAFKA_PASSWORD": "rotated-in-between"}
    result = run_cli(
        ["apply", *UNPACED, "--plan", str(plan_file), "--auto-approve", "--state", str(state)], env
    )
    assert result.exit_code == 1
    assert "differs from the one the plan was made with" in result.stderr
    ok = run_cli(
        ["apply", *UNPACED, "--plan", str(plan_file), "--auto-approve", "--state", str(state)],
        emulator.env(),
    )
    assert ok.exit_code == 0, ok.output
    sent = [
        r for r in emulator.requests() if r["method"] == "PATCH" and r["path"].endswith(KAFKA_PIPE)
    ]
    assert (
        sent[-1]["body"]["source"]["kafka"]["credentials"]["password"]
        == SECRET_ENV["KAFKA_PASSWORD"]
    )
    assert plan_code(emulator, [EXAMPLES], state)[0] == 0


def test_apply_should_report_each_action_and_finish_on_second_run_after_failure(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    emulator.set_service_state(ANALYTICS, "idle")  # pipes on an idle service answer 424
    result = run_cli(apply_args([EXAMPLES], state, "-o", "json"), emulator.env())
    assert result.exit_code == 1
    doc = result.json()
    outcomes = {r["resource"]: r["outcome"] for r in doc["results"]}
    assert outcomes["Pipe/orders"] == "failed"
    assert outcomes["Pipe/clickstream"] == "applied"
    failed = next(r for r in doc["results"] if r["resource"] == "Pipe/orders")["requests"][0]
    assert (
        failed["status"] == 424
        and failed["requestId"]
        and "FAILED_DEPENDENCY" not in (failed["error"] or "x")
    )
    text = run_cli(apply_args([EXAMPLES], state), emulator.env())
    assert "HTTP 424" in text.stdout and "Apply incomplete" in text.stdout
    emulator.set_service_state(ANALYTICS, "running")
    again = run_cli(apply_args([EXAMPLES], state), emulator.env())
    assert again.exit_code == 0, again.output
    assert plan_code(emulator, [EXAMPLES], state)[0] == 0


@pytest.mark.slow
def test_apply_under_20_percent_faults_should_converge_without_duplicate_dashboards(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=52, services=3)
    scale_manifests(tmp_path / "m", 52, 3)
    emulator.configure(faultRate=0.2, faultSeed=3)
    state = tmp_path / "state.json"
    runs = 0
    for runs in range(1, 8):  # noqa: B007
        result = run_cli(
            apply_args([tmp_path / "m"], state, "--parallelism", "8"),
            emulator.env(),
        )
        if result.exit_code == 0:
            break
    log = emulator.requests()
    faults = [r for r in log if r["fault"]]
    assert faults, "the emulator injected no faults"
    emulator.configure(faultRate=0.0)
    assert plan_code(emulator, [tmp_path / "m"], state)[0] == 0
    listed = httpx.get(
        f"{emulator.url}/api/v2/dashboards", headers={"Authorization": f"Bearer {emulator.token}"}
    ).json()["data"]
    names = [d["name"] for d in listed]
    assert sorted(names) == sorted(f"Dashboard {d}" for d in range(5)), (
        "duplicate or missing dashboards"
    )
    print(f"\nfault test: {runs} apply run(s), {len(log)} requests, {len(faults)} faults injected")


@pytest.mark.slow
def test_apply_killed_midway_should_finish_on_the_next_run(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=40, services=2)
    scale_manifests(tmp_path / "m", 40, 2, dashboards=3)
    emulator.configure(latencyMs=60)
    state = tmp_path / "state.json"
    env = {**os.environ, **SECRET_ENV, **emulator.env()}
    args = [
        sys.executable,
        "-m",
        "reconciler",
        *apply_args([tmp_path / "m"], state, "--parallelism", "2"),
    ]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(writes(emulator.requests())) < 8:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    settle(emulator)
    done_before = len(writes(emulator.requests()))
    assert 0 < done_before < 45, "the kill did not land in the middle of the run"
    json.loads(state.read_text())  # never half-written
    emulator.configure(latencyMs=0)
    result = run_cli(apply_args([tmp_path / "m"], state), emulator.env())
    assert result.exit_code == 0, result.output
    assert plan_code(emulator, [tmp_path / "m"], state)[0] == 0
    listed = httpx.get(
        f"{emulator.url}/api/v2/dashboards", headers={"Authorization": f"Bearer {emulator.token}"}
    ).json()["data"]
    assert len(listed) == 3
    print(f"\nkill test: killed after {done_before} writes; second run converged")


def test_concurrent_apply_should_fail_with_lock_holder_and_leave_state_intact(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    assert run_cli(apply_args([EXAMPLES], state), emulator.env()).exit_code == 0
    before = state.read_bytes()
    with locked_state(state):
        result = run_cli(apply_args([EXAMPLES], state, "--lock-timeout", "0.3"), emulator.env())
    assert result.exit_code == 1
    assert f"is locked by pid {os.getpid()}" in result.stderr
    assert "after waiting 0.3s" in result.stderr
    assert state.read_bytes() == before


def test_apply_should_take_over_lock_left_by_dead_process(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from reconciler.state.local import locked_state\nfrom pathlib import Path\nimport os\nwith locked_state(Path({str(state)!r})):\n    os.kill(os.getpid(), 9)",
        ],
    )
    holder.wait()
    result = run_cli(apply_args([EXAMPLES], state), emulator.env())
    assert result.exit_code == 0, result.output


def test_corrupt_state_file_should_be_a_clean_error_and_left_untouched(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    state.write_text("{not json")
    result = run_cli(apply_args([EXAMPLES], state), emulator.env())
    assert result.exit_code == 1
    assert "corrupt" in result.stderr and "left untouched" in result.stderr
    assert state.read_text() == "{not json"
    state.write_text(json.dumps({"formatVersion": 99, "key": "00" * 32, "resources": {}}))
    result = run_cli(["plan", *UNPACED, str(EXAMPLES), "--state", str(state)], emulator.env())
    assert result.exit_code == 1 and "newer than this reconcile understands" in result.stderr


def test_secrets_should_be_absent_from_every_output_plan_file_and_state(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    plan_file = tmp_path / "plan.json"
    outputs = [
        run_cli(
            [
                "--debug",
                "plan",
                *UNPACED,
                str(EXAMPLES),
                "--state",
                str(state),
                "--out",
                str(plan_file),
            ],
            emulator.env(),
        ).output,
        run_cli(
            ["plan", *UNPACED, str(EXAMPLES), "--state", str(state), "-o", "json"], emulator.env()
        ).output,
        run_cli(
            ["plan", *UNPACED, str(EXAMPLES), "--state", str(state), "-o", "markdown"],
            emulator.env(),
        ).output,
        run_cli(["--debug", *apply_args([EXAMPLES], state, "-o", "json")], emulator.env()).output,
        run_cli(
            ["apply", *UNPACED, "--plan", str(plan_file), "--auto-approve", "--state", str(state)],
            emulator.env(),
        ).output,
        run_cli(apply_args([EXAMPLES], state), emulator.env()).output,
        run_cli(["validate", str(EXAMPLES)], emulator.env()).output,
    ]
    files = [plan_file.read_text(), state.read_text()]
    for text in outputs + files:
        for value in SECRET_ENV.values():
            assert value not in text
    # The secrets did reach the server, once each.
    sent = json.dumps(emulator.requests())
    assert SECRET_ENV["PG_PASSWORD"] in sent


def test_secret_change_should_be_sent_once_then_not_again(
    emulator: Emulator, tmp_path: Path
) -> None:
    state = tmp_path / "state.json"
    assert run_cli(apply_args([EXAMPLES], state), emulator.env()).exit_code == 0
    env = {**emulator.env(), "KAFKA_PASSWORD": "rotated"}
    result = run_cli(
        ["plan", *UNPACED, str(EXAMPLES), "--state", str(state), "--detailed-exitcode"], env
    )
    assert result.exit_code == 2
    assert "source.kafka.credentials: (sensitive value changed)" in result.stdout
    assert run_cli(apply_args([EXAMPLES], state), env).exit_code == 0
    assert (
        run_cli(
            ["plan", *UNPACED, str(EXAMPLES), "--state", str(state), "--detailed-exitcode"], env
        ).exit_code
        == 0
    )


def test_a_later_update_without_secret_changes_keeps_the_recorded_fingerprints(
    emulator: Emulator, tmp_path: Path
) -> None:
    # Acceptance finding: an apply that changed only a setting of a pipe with credentials
    # dropped the pipe's secret fingerprints from state, so the next plan showed
    # "(sensitive value changed)" again and the credentials were re-sent on every other run.
    state = tmp_path / "state.json"
    manifest = tmp_path / "m"
    credentials = {"username": {"fromEnv": "KAFKA_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    spec = pipe_spec(
        source={"kafka": {"credentials": credentials}}, settings={"engine_max_threads": 6}
    )
    write_manifest(manifest / "p.yaml", "Pipe", "orders", spec)
    assert run_cli(apply_args([manifest], state), emulator.env()).exit_code == 0
    changed = {**spec, "settings": {"engine_max_threads": 7}}
    write_manifest(manifest / "p.yaml", "Pipe", "orders", changed)
    assert run_cli(apply_args([manifest], state), emulator.env()).exit_code == 0
    code, out = plan_code(emulator, [manifest], state)
    assert code == 0, out
    recorded = json.loads(state.read_text())["resources"]["Pipe/orders"]
    assert "source.kafka.credentials" in recorded["secrets"]
    assert "source.kafka.credentials" in recorded["managed"]


@pytest.mark.parametrize("how", ["alone", "with-an-update", "saved-plan"])
def test_a_secret_removed_from_the_manifest_is_sent_again_when_it_comes_back(
    emulator: Emulator, tmp_path: Path, how: str
) -> None:
    # A secret the manifest stops stating is no longer ours: someone may change it on the
    # server. Its fingerprint used to stay in state, so re-adding the same value planned
    # nothing and the server kept the other value.
    state, manifest = tmp_path / "state.json", tmp_path / "m"
    credentials = {"username": {"fromEnv": "KAFKA_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    spec = pipe_spec(
        source={"kafka": {"credentials": credentials}}, settings={"engine_max_threads": 6}
    )
    write_manifest(manifest / "p.yaml", "Pipe", "orders", spec)
    assert run_cli(apply_args([manifest], state), emulator.env()).exit_code == 0
    without = pipe_spec(settings={"engine_max_threads": 7 if how == "with-an-update" else 6})
    write_manifest(manifest / "p.yaml", "Pipe", "orders", without)
    if how == "saved-plan":
        saved = tmp_path / "p.plan"
        planned = run_cli(
            ["plan", *UNPACED, str(manifest), "--out", str(saved), "--state", str(state)],
            emulator.env(),
        )
        assert planned.exit_code == 0, planned.output
        document = json.loads(saved.read_text())
        assert document["actions"][0]["forgetSecrets"] == ["source.kafka.credentials"]
        schema = json.loads((REPO / "schemas" / "plan.schema.json").read_text())
        assert list(Draft202012Validator(schema).iter_errors(document)) == []
        removed = run_cli(
            ["apply", *UNPACED, "--plan", str(saved), "--auto-approve", "--state", str(state)],
            emulator.env(),
        )
    else:
        removed = run_cli(apply_args([manifest], state), emulator.env())
    assert removed.exit_code == 0, removed.output
    recorded = json.loads(state.read_text())["resources"]["Pipe/orders"]
    assert "source.kafka.credentials" not in recorded.get("secrets", {})
    assert "source.kafka.credentials" not in recorded.get("managed", [])
    # Meanwhile the credentials are changed on the server, by hand.
    path = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
    by_hand = {"username": "someone-else", "password": "changed-by-hand"}
    answer = httpx.patch(
        emulator.url + path,
        json={"source": {"kafka": {"credentials": by_hand}}},
        auth=(emulator.key_id, emulator.key_secret),
    )
    assert answer.status_code == 200, answer.text
    write_manifest(manifest / "p.yaml", "Pipe", "orders", spec)
    code, out = plan_code(emulator, [manifest], state)
    assert code == 2 and "source.kafka.credentials: (sensitive value changed)" in out, out
    assert run_cli(apply_args([manifest], state), emulator.env()).exit_code == 0
    live = emulator.data()["pipes"][KAFKA_PIPE]["source"]["kafka"]["credentials"]
    assert live == {"username": SECRET_ENV["KAFKA_USER"], "password": SECRET_ENV["KAFKA_PASSWORD"]}
    assert plan_code(emulator, [manifest], state)[0] == 0
    text = state.read_text() + removed.output + out
    assert not any(value in text for value in SECRET_ENV.values())


def _dashboard(root: Path, title: str, width: int = 6) -> None:
    tile = {**TILE, "w": width}
    write_manifest(
        root / "d.yaml", "Dashboard", "ops", {"name": title, "tiles": [tile], "tags": ["ops"]}
    )


def _live_dashboards(emulator: Emulator) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{emulator.url}/api/v2/dashboards", headers={"Authorization": f"Bearer {emulator.token}"}
    )
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def test_dashboard_without_list_endpoint_should_be_created_once_and_replaced_only_on_request(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _dashboard(root, "Ops")
    assert run_cli(apply_args([root], state, "--new-state"), emulator.env()).exit_code == 0
    assert run_cli(apply_args([root], state), emulator.env()).exit_code == 0
    assert len(writes(emulator.requests())) == 1
    _dashboard(root, "Ops", width=12)
    result = run_cli(["plan", *UNPACED, str(root), "--state", str(state)], emulator.env())
    assert result.exit_code == 0
    assert "not updatable through this API" in result.stdout
    first_id = json.loads(state.read_text())["resources"]["Dashboard/ops"]["id"]
    replaced = run_cli(apply_args([root], state, "--replace"), emulator.env())
    assert replaced.exit_code == 0, replaced.output
    assert f"the old one ({first_id}) is left in place" in replaced.stdout
    recorded = json.loads(state.read_text())["resources"]["Dashboard/ops"]
    assert recorded["id"] != first_id and recorded["replaced"] == [first_id]
    assert (
        run_cli(
            ["plan", *UNPACED, str(root), "--state", str(state), "--detailed-exitcode"],
            emulator.env(),
        ).exit_code
        == 0
    )


def test_dashboard_with_list_endpoint_should_adopt_update_and_report_drift(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "state.json"
    existing = httpx.post(
        f"{emulator.url}/api/v2/dashboards",
        json={"name": "Ops", "tiles": [], "tags": []},
        headers={"Authorization": f"Bearer {emulator.token}"},
    ).json()["data"]
    _dashboard(root, "Ops")  # metadata.name "ops"; adopted through spec.name "Ops"
    result = run_cli(apply_args([root], state), emulator.env())
    assert result.exit_code == 0, result.output
    assert [d["id"] for d in _live_dashboards(emulator)] == [
        existing["id"]
    ]  # adopted, not duplicated
    # Someone edits it on the server: the next plan reports drift and updates it back.
    httpx.put(
        f"{emulator.url}/api/v2/dashboards/{existing['id']}",
        json={"name": "Ops", "tiles": [], "tags": ["edited"]},
        headers={"Authorization": f"Bearer {emulator.token}"},
    ).raise_for_status()
    drift = run_cli(
        ["plan", *UNPACED, str(root), "--state", str(state), "--detailed-exitcode"], emulator.env()
    )
    assert drift.exit_code == 2
    assert "server-side drift" in drift.stdout
    assert run_cli(apply_args([root], state), emulator.env()).exit_code == 0
    assert (
        run_cli(
            ["plan", *UNPACED, str(root), "--state", str(state), "--detailed-exitcode"],
            emulator.env(),
        ).exit_code
        == 0
    )


def test_prune_should_delete_only_dashboards_this_tool_created(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "state.json"
    foreign = httpx.post(
        f"{emulator.url}/api/v2/dashboards",
        json={"name": "Not ours"},
        headers={"Authorization": f"Bearer {emulator.token}"},
    ).json()["data"]
    _dashboard(root, "Ops")
    assert run_cli(apply_args([root], state), emulator.env()).exit_code == 0
    (root / "d.yaml").unlink()
    write_manifest(root / "p.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 4}))
    kept = run_cli(apply_args([root], state), emulator.env())
    assert kept.exit_code == 0
    assert len(_live_dashboards(emulator)) == 2
    pruned = run_cli(apply_args([root], state, "--prune"), emulator.env())
    assert pruned.exit_code == 0, pruned.output
    assert [d["id"] for d in _live_dashboards(emulator)] == [foreign["id"]]
    assert "Dashboard/ops" not in json.loads(state.read_text())["resources"]
