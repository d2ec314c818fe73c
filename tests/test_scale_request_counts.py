"""Quick correctness checks of each scale scenario (bench/plan_scale.py) at small N.

No timing is asserted: these pin the request counts the benchmark's ratios rest on (list mode:
services list + one pipe list per service; spec-only: one GET per pipe after one probe), zero
429s when the client's budget matches the server's limit, exactly one write per changed pipe
on apply, and no progress output when stderr is not a TTY. Manifests come from
``bench/manifests_gen.py``, so they match the emulator's scale seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.manifests_gen import write_manifests
from reconciler.load.yamlsource import YamlSyntaxError, parse, parse_located, position_index
from reconciler.state.local import load_state
from tests.support.cli import run_cli, writes
from tests.support.emulator import Emulator

REPO = Path(__file__).resolve().parent.parent
PIPES = 40
SERVICES = 3


def _plan(emulator: Emulator, manifests: Path, state: Path, *extra: str) -> str:
    result = run_cli(
        ["plan", str(manifests), "--state", str(state), "--detailed-exitcode", *extra],
        emulator.env(),
    )
    assert result.exit_code == 2, result.output
    return result.stdout


def test_list_mode_should_read_services_once_and_one_pipe_list_per_service(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=PIPES, services=SERVICES)
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=PIPES)
    out = _plan(emulator, tmp_path / "m", tmp_path / "state.json")
    log = emulator.requests()
    assert [r["method"] for r in log] == ["GET"] * (1 + SERVICES)
    assert sum(r["path"].endswith("/services") for r in log) == 1
    assert sum(r["path"].endswith("/pipes") for r in log) == SERVICES
    assert all(r["status"] == 200 for r in log)
    assert f"0 to create, {PIPES} to update" in out


def test_service_ids_should_skip_the_services_list(emulator: Emulator, tmp_path: Path) -> None:
    emulator.reset(seedPipes=PIPES, services=SERVICES)
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=5, by_name=False)
    _plan(emulator, tmp_path / "m", tmp_path / "state.json")
    log = emulator.requests()
    assert len(log) == SERVICES
    assert all(r["path"].endswith("/pipes") for r in log)


def test_spec_only_should_send_one_get_per_pipe_after_one_probe(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=PIPES, services=SERVICES)
    emulator.configure(specOnly=True)
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=PIPES)
    out = _plan(
        emulator, tmp_path / "m", tmp_path / "state.json", "--rate", "none", "--parallelism", "16"
    )
    log = emulator.requests()
    probes = [r for r in log if r["path"].endswith("/pipes")]
    singles = [r for r in log if "/pipes/" in r["path"]]
    assert len(log) == 1 + 1 + PIPES
    assert [r["status"] for r in probes] in ([404], [405])
    assert len(singles) == PIPES and len({r["path"] for r in singles}) == PIPES
    assert f"{PIPES} to update" in out


def test_budget_matching_the_server_limit_should_get_no_429(
    emulator: Emulator, tmp_path: Path
) -> None:
    pipes = 12  # 14 requests under 5 per 2 s: three windows, about 4 s
    emulator.reset(seedPipes=pipes, services=SERVICES)
    emulator.configure(specOnly=True, rateLimit="5/2")
    write_manifests(tmp_path / "m", pipes, SERVICES, changed=pipes)
    _plan(emulator, tmp_path / "m", tmp_path / "state.json", "--rate", "5/2")
    log = emulator.requests()
    assert len(log) == 2 + pipes
    assert [r for r in log if r["status"] == 429] == []


def test_apply_should_send_exactly_one_write_per_changed_pipe(
    emulator: Emulator, tmp_path: Path
) -> None:
    changed = 25
    emulator.reset(seedPipes=PIPES, services=SERVICES)
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=changed)
    state = tmp_path / "state.json"
    result = run_cli(
        ["apply", str(tmp_path / "m"), "--auto-approve", "--state", str(state), "--rate", "none"],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    sent = writes(emulator.requests())
    assert [r["method"] for r in sent] == ["PATCH"] * changed
    assert len({r["path"] for r in sent}) == changed
    assert f"Apply complete: {changed} applied" in result.stdout
    recorded = load_state(state).resources
    assert len([k for k in recorded if k.startswith("Pipe/")]) == changed
    json.loads(state.read_text())  # one line per resource, still plain JSON
    again = run_cli(["plan", str(tmp_path / "m"), "--state", str(state)], emulator.env())
    assert again.exit_code == 0 and "No changes" in again.stdout


def test_progress_should_stay_off_when_stderr_is_not_a_tty(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=PIPES, services=SERVICES)
    write_manifests(tmp_path / "m", PIPES, SERVICES, changed=PIPES)
    env = {**os.environ, **emulator.env(), "NO_COLOR": "1"}
    for args in (
        ["plan", str(tmp_path / "m")],
        ["apply", str(tmp_path / "m"), "--auto-approve", "--rate", "none"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reconciler", *args, "--state", str(tmp_path / "state.json")],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=60,
            check=False,
        )
        assert done.returncode in (0, 2), done.stdout + done.stderr
        assert done.stderr == ""


def test_one_pass_positions_should_match_the_lazy_index_and_reject_duplicates() -> None:
    data = b"a: 1\nb:\n  - x\n  - {c: 1}\n---\nd: [1, 2]\n"
    docs, index = parse_located(data)
    assert docs == parse(data)
    assert index == position_index(data)
    try:
        parse_located(b"a: 1\na: 2\n")
    except YamlSyntaxError as exc:
        assert exc.line == 2
    else:  # pragma: no cover
        raise AssertionError("duplicate key accepted")
