"""SIGINT/SIGTERM during apply, with a real subprocess and a slow emulator: no new request is
started, in-flight ones finish (a second Ctrl-C aborts them), state is saved, the usual
per-action summary lists what was not started as `skipped`, the exit status is 130 (143 for
SIGTERM), and a second apply converges. Before anything is sent (reading manifests, state and
the live objects, for plan or apply), SIGINT and SIGTERM alike end the run with a message, the
exit status 130/143 and, when asked, the ``-o json`` document."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator.seed import scale_ids, scale_service_id
from tests.support.cli import SECRET_ENV, pipe_spec, run_cli, settle, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.pipes import kafka_spec, pipes_named
from tests.support.watch import WatchProcess

PIPES = 12


def _manifests(root: Path) -> None:
    for index in range(1, PIPES + 1):
        name, pid = scale_ids(index)
        spec = pipe_spec(pid, scale_service_id(1), settings={"engine_max_threads": 7})
        write_manifest(root / f"{name}.yaml", "Pipe", name, spec)
    tile = {
        "name": "t",
        "x": 0,
        "y": 0,
        "w": 6,
        "h": 3,
        "series": [{"type": "time", "dataSource": "events"}],
    }
    write_manifest(root / "dash.yaml", "Dashboard", "ops", {"name": "Ops", "tiles": [tile]})


def _start_apply(emulator: Emulator, root: Path, state: Path) -> subprocess.Popen[str]:
    args = [
        "apply",
        str(root),
        "--auto-approve",
        "--state",
        str(state),
        "--rate",
        "none",
        "--parallelism",
        "2",
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        env={
            **os.environ,
            **SECRET_ENV,
            **emulator.env(),
            "NO_COLOR": "1",
            "PYTHONUNBUFFERED": "1",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _signal_while_reading(
    emulator: Emulator, args: list[str], signum: int
) -> tuple[subprocess.Popen[str], str, str]:
    """Start ``reconcile ARGS``, send ``signum`` once its first read is in flight; its output."""
    emulator.configure(latencyMs=1_500)  # the first reads are still in flight at the signal
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args, "--rate", "none"],
        env={**os.environ, **SECRET_ENV, **emulator.env(), "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not emulator.requests():
        time.sleep(0.02)
    assert emulator.requests(), f"{args[0]} never started reading"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    return proc, out, err


def _wait_for_writes(emulator: Emulator, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(writes(emulator.requests())) < count:
        time.sleep(0.02)
    assert len(writes(emulator.requests())) >= count, "apply never started writing"


def _converges(emulator: Emulator, root: Path, state: Path) -> None:
    # Requests the interrupted run left on the wire still land on the server: wait for them
    # (else they land in the next test, or after this test's checks).
    settle(emulator)
    emulator.configure(latencyMs=0)
    again = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert again.exit_code == 0, again.output
    plan = run_cli(
        ["plan", str(root), "--detailed-exitcode", "--state", str(state)], emulator.env()
    )
    assert plan.exit_code == 0, plan.output
    dashboards: list[Any] = list(emulator.data()["dashboards"].values())
    assert len(dashboards) == 1


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_signal_during_apply_stops_new_requests_reports_skipped_and_converges_later(
    emulator: Emulator, tmp_path: Path, signum: int, code: int
) -> None:
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    emulator.configure(latencyMs=300)
    proc = _start_apply(emulator, root, state)
    _wait_for_writes(emulator, 1)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, out + err
    sent = len(writes(emulator.requests()))
    assert sent < PIPES + 1, "every request was sent: the signal did not stop new ones"
    name = signal.Signals(signum).name
    assert f"Apply interrupted by {name}" in out
    assert " skipped" in out and "not started" in out
    assert "Traceback" not in err
    _converges(emulator, root, state)


def test_a_second_ctrl_c_aborts_requests_in_flight(emulator: Emulator, tmp_path: Path) -> None:
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    emulator.configure(latencyMs=3_000)
    proc = _start_apply(emulator, root, state)
    _wait_for_writes(emulator, 2)  # two requests in flight, each answering after 3 s
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    # Only an abort before the answers came makes an action "uncertain" (else it is applied).
    assert "uncertain" in out and "aborted while in flight" in out
    assert "Apply interrupted by SIGINT" in out
    _converges(emulator, root, state)


@pytest.mark.parametrize(
    ("command", "signum"),
    [("plan", signal.SIGTERM), ("apply", signal.SIGTERM), ("plan", signal.SIGINT)],
    ids=["plan-SIGTERM", "apply-SIGTERM", "plan-SIGINT"],
)
def test_a_signal_while_reading_ends_with_a_message_the_signal_status_and_the_json_document(
    emulator: Emulator, tmp_path: Path, command: str, signum: signal.Signals
) -> None:
    # SIGTERM here used to keep Python's default: exit 143, no message, no document.
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    extra = ["--auto-approve"] if command == "apply" else []
    args = [command, str(root), *extra, "-o", "json", "--state", str(state)]
    proc, out, err = _signal_while_reading(emulator, args, signum)
    code = 128 + signum
    assert proc.returncode == code, out + err
    assert f"Interrupted by {signum.name}" in err and "Traceback" not in err
    document = json.loads(out)
    assert document["exitCode"] == code
    assert [e["type"] for e in document["errors"]] == ["Interrupted"]
    assert signum.name in document["errors"][0]["message"]
    assert not writes(emulator.requests())
    settle(emulator)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_at_the_confirmation_prompt_ends_the_run_at_once_and_sends_nothing(
    emulator: Emulator, tmp_path: Path, signum: signal.Signals
) -> None:
    # The prompt blocks the event loop, whose own Ctrl-C handler only cancels the task: the
    # first Ctrl-C (or SIGTERM) at "Apply N change(s)? [y/N]" used to be swallowed.
    root, state = tmp_path / "m", tmp_path / "state.json"
    write_manifest(root / "p.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 9}))
    args = ["apply", str(root), "--state", str(state), "--rate", "none"]
    env = {**os.environ, **SECRET_ENV, **emulator.env(), "NO_COLOR": "1"}
    pid, fd = pty.fork()  # the prompt needs a terminal
    if pid == 0:  # pragma: no cover - the child becomes the CLI
        os.execve(sys.executable, [sys.executable, "-m", "reconciler", *args], env)
    seen = _read_until(fd, b"[y/N]", deadline=time.monotonic() + 30)
    assert b"[y/N]" in seen, seen
    # A signal landing inside input() before its read starts waits for the next line (the
    # interpreter's own race, microseconds wide; the test would hit it): signal once waiting.
    _wait_until_reading_stdin(pid)
    os.kill(pid, signum)
    deadline = time.monotonic() + 10
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        seen += _read_until(fd, b"\0", deadline=time.monotonic() + 0.1)
    if ended[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"still waiting at the prompt after {signum.name}")
    seen += _read_until(fd, b"\0", deadline=time.monotonic() + 0.5)
    os.close(fd)
    assert os.waitstatus_to_exitcode(ended[1]) == 128 + signum, seen
    assert f"Interrupted by {signum.name}".encode() in seen
    assert not writes(emulator.requests())


def _read_until(fd: int, marker: bytes, deadline: float) -> bytes:
    out = b""
    while marker not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    return out


def _wait_until_reading_stdin(pid: int) -> None:
    # /proc/PID/syscall starts with the number of the call a process is blocked in and its
    # first argument; reading /proc/self/syscall shows the number of read() itself.
    with open("/proc/self/syscall") as own:
        read_call = own.read().split()[0]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/syscall") as theirs:
            if theirs.read().split()[:2] == [read_call, "0x0"]:
                return
        time.sleep(0.01)
    raise AssertionError("the prompt never waited for an answer")


@pytest.mark.parametrize("output", ["text", "json"])
def test_sigint_while_apply_is_still_reading_says_nothing_was_sent(
    emulator: Emulator, tmp_path: Path, output: str
) -> None:
    # It used to say only "Interrupted by SIGINT.": the user could not tell whether anything
    # had been sent.
    emulator.reset(seedPipes=PIPES, services=1)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _manifests(root)
    args = ["apply", str(root), "--auto-approve", "-o", output, "--state", str(state)]
    proc, out, err = _signal_while_reading(emulator, args, signal.SIGINT)
    assert proc.returncode == 130, out + err
    assert "Interrupted by SIGINT before anything was sent." in err.splitlines(), err
    assert "Traceback" not in err
    if output == "json":
        document = json.loads(out)
        assert document["exitCode"] == 130
        assert [e["type"] for e in document["errors"]] == ["Interrupted"]
        assert document["errors"][0]["message"] == "Interrupted by SIGINT before anything was sent."
        assert document["results"] == []
    assert not writes(emulator.requests())
    settle(emulator)


def test_sigterm_while_apply_waits_for_the_request_budget_ends_the_wait_at_once(
    emulator: Emulator, tmp_path: Path
) -> None:
    # The budget allows one request per 30 s and the plan's read took it, so apply's PATCH waits
    # for a place. SIGTERM used to leave that wait running to the window's end (~30 s here; a
    # `watch` being stopped took one window to exit): the run must end before the place frees.
    root, state = tmp_path / "m", tmp_path / "state.json"
    write_manifest(root / "org.yaml", "Organization", "acme", {"name": "Acme renamed"})
    args = ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "1/30"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        env={**os.environ, **emulator.env(), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    planned = ""
    while "Requests made: 1 (management 1)." not in planned:
        line = proc.stdout.readline()
        assert line, f"apply ended before its plan was printed: {planned}"
        planned += line
    time.sleep(1.0)  # apply is now waiting for the budget's next place (in ~29 s)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=15)  # half the window: the place is not free yet
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("SIGTERM left apply waiting for the request budget") from None
    assert proc.returncode == 143, planned + out + err
    assert "Interrupted by SIGTERM: no new requests; none in flight.\n" in err
    assert "Traceback" not in err
    assert out.splitlines() == [
        "Organization/acme: skipped",
        f"    PATCH /v1/organizations/{emulator.org_id} [update]: skipped (-)",
        "    not started: apply was interrupted by SIGTERM",
        "Apply interrupted by SIGTERM: 0 applied, 0 failed, 1 skipped.",
        "State is saved. Run apply again to finish the job.",
    ]
    assert not writes(emulator.requests())
    again = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert again.exit_code == 0, again.output
    assert emulator.data()["organizations"][emulator.org_id]["name"] == "Acme renamed"


CREATES = ("ev1", "ev2", "ev3")


def _create_manifests(root: Path) -> None:
    for name in CREATES:
        write_manifest(root / f"{name}.yaml", "Pipe", name, kafka_spec(name, name, name))


@pytest.mark.parametrize("output", ["text", "json"])
def test_sigterm_while_creates_are_in_flight_reports_each_answered_create_applied(
    emulator: Emulator, tmp_path: Path, output: str
) -> None:
    # Each create was answered and recorded, then the wait for the pipe to run was cut short:
    # the run used to report every pipe "skipped" and "not started".
    root, state = tmp_path / "m", tmp_path / "state.json"
    _create_manifests(root)
    emulator.configure(latencyMs=1_500)  # the three POSTs wait on the wire together
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "reconciler", "apply", str(root), "--auto-approve"),
            *("-o", output, "--state", str(state), "--rate", "none", "--parallelism", "4"),
        ],
        env={**os.environ, **SECRET_ENV, **emulator.env(), "RECONCILE_CONFIG": os.devnull},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_writes(emulator, len(CREATES))  # the creates, all in flight
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, out + err
    settle(emulator)
    recorded = json.loads(state.read_text())["resources"]
    for name in CREATES:
        (made,) = pipes_named(emulator, name)
        assert recorded[f"Pipe/{name}"]["id"] == made["id"]
    if output == "json":
        results = {r["resource"]: r for r in json.loads(out)["results"]}
        for name in CREATES:
            result = results[f"Pipe/{name}"]
            assert result["outcome"] == "applied", result
            assert not any("not started" in m for m in result["messages"]), result
            assert any("interrupted by SIGTERM" in m for m in result["messages"]), result
    else:
        for name in CREATES:
            assert f"Pipe/{name}: applied" in out.splitlines(), out
        assert "not started" not in out
        assert f"Apply interrupted by SIGTERM: {len(CREATES)} applied" in out
    emulator.configure(latencyMs=0)
    again = run_cli(
        ["apply", str(root), "--auto-approve", "--state", str(state), "--rate", "none"],
        {**emulator.env(), "RECONCILE_CONFIG": os.devnull},
    )
    assert again.exit_code == 0, again.output
    assert [len(pipes_named(emulator, name)) for name in CREATES] == [1, 1, 1]


def test_a_watch_stopped_while_creating_logs_the_creates_it_made(
    emulator: Emulator, tmp_path: Path
) -> None:
    _create_manifests(tmp_path / "m")
    emulator.configure(latencyMs=1_500)
    args = ["m", "--state", "s.json", "--mode", "correct", "--interval", "1h", "--rate", "none"]
    watch = WatchProcess([*args, "--log-format", "text"], tmp_path, emulator.env()).start()
    try:
        _wait_for_writes(emulator, len(CREATES))  # the creates, all in flight
    finally:
        code = watch.terminate(timeout=60)
    assert code == 0, "\n".join(watch.lines)
    found = watch.wait_for_line(r"cycle 1: \S+; changes found (\d+), corrected (\d+)")
    assert found.groups() == ("3", "3"), "\n".join(watch.lines)
    settle(emulator)
