"""The server going away mid-apply (a real emulator process, stopped while apply sends): apply
gives up promptly, reports each action once (applied, not sent, or unknown), says "not sent"
of requests whose connection was refused, ends with one run-level line on what was sent and
what was not, and a second apply against the server back up finishes the job.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from reconciler.client.api import Client
from reconciler.client.health import REFUSED_GRACE
from reconciler.client.limits import RequestLimits
from reconciler.emulator.seed import scale_ids, scale_service_id
from reconciler.model.apierrors import Delivery, InterfaceDown, NotSent
from reconciler.model.errors import ReconcileError
from tests.support.cli import SECRET_ENV, pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import start_emulator, stop_emulator
from tests.support.hostile_server import Handler, HostileServer, client_config, envelope

PIPES = 12


def _manifests(root: Path) -> list[str]:
    names = []
    for index in range(1, PIPES + 1):
        name, pid = scale_ids(index)
        spec = pipe_spec(pid, scale_service_id(1), settings={"engine_max_threads": 7})
        write_manifest(root / f"{name}.yaml", "Pipe", name, spec)
        names.append(name)
    return names


def _apply(env: dict[str, str], root: Path, state: Path, *extra: str) -> subprocess.Popen[str]:
    args = ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"]
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args, "--parallelism", "2", *extra],
        env={**os.environ, **SECRET_ENV, **env, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop_after_writes(
    data: Path, root: Path, state: Path, *extra: str
) -> tuple[str, str, int, float]:
    """Apply against an emulator stopped after its third write; return out, err, code, seconds."""
    emulator = start_emulator("--data", str(data), "--seed-pipes", str(PIPES), "--services", "1")
    try:
        emulator.configure(latencyMs=400)  # two writes in flight at a time, slowly
        proc = _apply(emulator.env(), root, state, *extra)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(writes(emulator.requests())) < 3:
            time.sleep(0.02)
        assert len(writes(emulator.requests())) >= 3, "apply never started writing"
    finally:
        stop_emulator(emulator)
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=120)
    return out, err, proc.returncode, time.monotonic() - stopped


def test_apply_when_the_server_goes_away_reports_each_action_once_and_one_line_for_the_run(
    tmp_path: Path,
) -> None:
    root, state, data = tmp_path / "m", tmp_path / "state.json", tmp_path / "emulator.json"
    names = _manifests(root)
    out, err, code, seconds = _stop_after_writes(data, root, state)
    assert code == 1, out + err
    assert "Traceback" not in err
    results = out[out.index("Requests made:") :]
    for name in names:  # each action reported once, by its one head line
        assert len(re.findall(rf"^Pipe/{name}: ", results, re.M)) == 1, results
    applied = len(re.findall(r"^Pipe/\S+: applied$", results, re.M))
    not_sent = len(re.findall(r"^Pipe/\S+: skipped$", results, re.M))
    unknown = len(re.findall(r"^Pipe/\S+: uncertain$", results, re.M))
    assert applied >= 1 and not_sent >= 1 and applied + not_sent + unknown == PIPES, results
    # A refused connection sent nothing: never "no response" for it, and no message twice.
    assert "no response" not in results
    lines = results.splitlines()
    assert not [
        line
        for line in lines
        if line.strip() and lines.count(line) > 1 and ":" in line and "PATCH" in line
    ]
    run_lines = [line for line in lines if line.startswith("The management API ")]
    assert len(run_lines) == 1, results
    assert "stopped answering" in run_lines[0] and "connections refused" in run_lines[0]
    assert f"{applied} applied" in run_lines[0] and f"{not_sent} not sent" in run_lines[0]
    assert f"{unknown} unknown" in run_lines[0]
    assert seconds < 30, f"{seconds:.1f} s to give up after the server went away"

    # The server back (same data): a second apply finishes the job.
    again = start_emulator("--data", str(data))
    try:
        finish = run_cli(
            ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
            again.env(),
        )
        assert finish.exit_code == 0, finish.output
        plan = run_cli(
            ["plan", str(root), "--detailed-exitcode", "--state", str(state)], again.env()
        )
        assert plan.exit_code == 0, plan.output
    finally:
        stop_emulator(again)


def test_apply_json_when_the_server_goes_away_names_the_interface_once(tmp_path: Path) -> None:
    root, state, data = tmp_path / "m", tmp_path / "state.json", tmp_path / "emulator.json"
    _manifests(root)
    out, err, code, _ = _stop_after_writes(data, root, state, "-o", "json")
    assert code == 1, out + err
    document = json.loads(out)
    schema = Path(__file__).resolve().parent.parent / "schemas" / "apply-result.schema.json"
    jsonschema.validate(document, json.loads(schema.read_text(encoding="utf-8")))
    assert document["exitCode"] == 1
    down = [e for e in document["errors"] if e["type"] == "InterfaceDown"]
    assert len(down) == 1 and down[0]["interface"] == "management"
    outcomes = {r["resource"]: r["outcome"] for r in document["results"]}
    assert len(outcomes) == PIPES
    skipped = [r for r in document["results"] if r["outcome"] == "skipped"]
    assert skipped and all(q["outcome"] == "skipped" for r in skipped for q in r["requests"])
    assert all(q["error"].startswith("not sent") for r in skipped for q in r["requests"])
    assert any("stopped answering" in note for note in document["notes"])


def _client_against_a_server_that_goes_away(attempts: int) -> tuple[BaseException, float]:
    """GET once from a live server, stop it, GET again; return the error and its seconds."""

    def answer_and_hang_up(h: Handler) -> None:
        h.answer(200, envelope({"id": "org"}), "application/json", Connection="close")
        h.close_connection = True  # no keep-alive connection outlives the server

    server = HostileServer(answer_and_hang_up)
    config = client_config(server, attempts=attempts, limits=RequestLimits())

    async def go() -> tuple[BaseException, float]:
        async with Client(config) as client:
            assert await client.get("/v1/organizations/x") == {"id": "org"}
            server.stop()
            start = time.monotonic()
            with pytest.raises(ReconcileError) as caught:
                await client.get("/v1/organizations/x", resource="organization acme")
            return caught.value, time.monotonic() - start

    return asyncio.run(go())


def test_a_request_whose_connections_were_all_refused_is_not_sent_not_without_response() -> None:
    error, _ = _client_against_a_server_that_goes_away(attempts=2)
    assert isinstance(error, NotSent)
    assert str(error).startswith("organization acme: not sent: ConnectError")
    assert "no response" not in str(error)


def test_refused_connections_after_a_success_give_the_interface_up_within_the_grace() -> None:
    error, seconds = _client_against_a_server_that_goes_away(attempts=100)
    assert isinstance(error, InterfaceDown)
    assert error.delivery is Delivery.NOT_SENT
    assert "connections refused for" in str(error) and "after it had answered" in str(error)
    assert seconds <= REFUSED_GRACE + 1  # backoff 0.2 s at most: no wait outlives the grace
