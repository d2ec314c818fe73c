"""Reading manifests in forked workers: the same resources and errors as a sequential read.

Covers ``reconciler.load.workers`` through ``load_resources``: on a generated set with invalid
manifests spread over every block (errors that cross blocks and processes included), the
parallel read equals the sequential one (resources, spec, file/index, lazy positions, errors in
order); a worker that exits, is killed or sends a truncated or garbled answer loses nothing;
no fork with another thread running, with ``RECONCILE_LOAD_WORKERS=1`` or below the size
threshold; a bad setting is a ConfigError; a read inside a running asyncio loop leaves the loop
working. A read started ahead (``start_loading``, as the command line does before importing the
later stages) has its workers at work when it returns, answers exactly what ``load_resources``
answers, alike each time it is asked, and ends its workers when abandoned. Sizes are kept small
by lowering the threshold and the block size; nothing is timed.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from bench.manifests_gen import pipe_manifest
from reconciler.load import manifests, workers
from reconciler.load.manifests import load_resources, start_loading
from reconciler.load.yamlsource import ManifestLimits
from reconciler.model.errors import ConfigError, ManifestErrors
from reconciler.model.resources import Resource
from tests.support.manifests import write

N = 60  # three parts of 20 files with RECONCILE_LOAD_WORKERS=3
real_can_fork = workers.can_fork


@dataclass
class Spy:
    """The forks this process made, and the number of blocks each worker's answer held."""

    forks: list[int] = field(default_factory=list)
    answers: list[int | None] = field(default_factory=list)  # None: the worker failed
    waited: bool = False
    barrier: int = 0


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Spy]:
    """Small blocks and threshold, forks and answers counted, every process given a block.

    The suite runs helper threads (servers' output pumps) that the loader's own check would
    rightly refuse to fork beside; these tests fork anyway (their workers touch nothing those
    threads hold). The check itself is tested below, and in a clean process. When there are
    at least as many blocks as processes, each process waits after taking its first block
    until every worker has taken one (a barrier): no worker's share is ever empty, however
    slowly it starts.
    """
    monkeypatch.setattr(workers, "MIN_PER_PROCESS", 5)
    monkeypatch.setattr(workers, "BLOCK", 4)
    monkeypatch.setattr(workers, "can_fork", lambda: sys.platform == "linux")
    monkeypatch.setenv("RECONCILE_LOAD_WORKERS", "3")
    seen = Spy()
    parent, started = os.getpid(), tmp_path / "started"
    started.mkdir()
    real_fork, real_receive = os.fork, workers._receive
    real_parts, real_read = workers.start_parts, manifests._Reader.read

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            seen.forks.append(pid)
        return pid

    def receive(pid: int, fd: int) -> Any:
        answer = real_receive(pid, fd)
        seen.answers.append(None if answer is workers._FAILED else len(answer))
        return answer

    def start_parts(items: Sequence[Any], read: Any, processes: int) -> Any:
        enough = len(workers.blocks(len(items))) >= processes
        seen.barrier = processes - 1 if processes > 1 and enough else 0
        # Each read starts unwaited: a sequential read before it (the tests comparing with
        # one) set the flag in this process, and forked workers inherited it and skipped the
        # barrier, so under load one worker could take every block (seen failing: answers [1, 0]).
        seen.waited = False
        return real_parts(items, read, processes)

    def read(self: manifests._Reader, paths: Sequence[str]) -> Any:
        if not seen.waited:  # this process's first block
            seen.waited = True
            if os.getpid() != parent:
                (started / str(os.getpid())).touch()
            deadline = time.monotonic() + 20
            while len(list(started.iterdir())) < seen.barrier:
                assert time.monotonic() < deadline, "a worker did not start"
                time.sleep(0.002)
        return real_read(self, paths)

    monkeypatch.setattr(workers.os, "fork", counting_fork)
    monkeypatch.setattr(workers, "_receive", receive)
    monkeypatch.setattr(workers, "start_parts", start_parts)
    monkeypatch.setattr(manifests, "start_parts", start_parts)
    monkeypatch.setattr(manifests._Reader, "read", read)
    yield seen


def valid_set(directory: Path, n: int = N) -> Path:
    for index in range(1, n + 1):
        write(directory, f"pipe-{index:05d}.yaml", pipe_manifest(index, 3, changed=index % 7 == 0))
    return directory


def invalid_set(directory: Path) -> Path:
    """A set whose errors land in every part, some naming a manifest in another part."""
    valid_set(directory)
    pipe = pipe_manifest
    bad = {
        # part 0 (files 1-20)
        3: "apiVersion: reconcile/v1\nkind: Pipe\nmetadata: {name: [unclosed\n",
        5: pipe(5, 3, changed=False).replace("replicas: 2", "replicas: many"),
        8: "".join(
            line
            for line in pipe(8, 3, changed=False).splitlines(keepends=True)
            if "organizationId" not in line
        ),
        # part 1 (files 21-40): two names of files in part 0, a duplicate key, an empty file,
        # a file of two documents with one bad
        22: _with_pipe_id(pipe(2, 3, changed=False), "11111111-2222-4333-8444-555555555555"),
        25: pipe(25, 3, changed=False).replace(
            "metadata:\n  name: pipe-00025", "metadata:\n  name: pipe-00004"
        ),
        27: pipe(27, 3, changed=False) + "kind: Pipe\n",
        30: "# nothing here\n",
        33: pipe(33, 3, changed=False) + "---\nkind: Dashboard\n",
        # part 2 (files 41-60): the name claimed by file 8 (whose spec check failed), a pipe
        # id of file 21 (part 1), a document that is not a mapping, a file above the bound
        44: pipe(44, 3, changed=False).replace(
            "name: pipe-00044\n  labels", "name: pipe-00008\n  labels"
        ),
        47: _with_pipe_id(pipe(47, 3, changed=False), _pipe_id(pipe(21, 3, changed=False))),
        52: "- just\n- a list\n",
        58: pipe(58, 3, changed=False) + "#" + "x" * 3000 + "\n",
    }
    for index, text in bad.items():
        write(directory, f"pipe-{index:05d}.yaml", text)
    return directory


def _pipe_id(text: str) -> str:
    return text.split("pipeId: ")[1].split("\n")[0]


def _with_pipe_id(text: str, pipe_id: str) -> str:
    return text.replace(_pipe_id(text), pipe_id)


def assert_reaped(pids: list[int]) -> None:
    """Every worker was waited for: none is left running or as a zombie."""
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def outcome(load: Callable[[], list[Resource]]) -> tuple[str, Any]:
    """Everything a caller can observe of a load: errors in order, or resources in full."""
    try:
        resources = load()
    except ManifestErrors as exc:
        return "errors", [(e.location, e.path, e.message, str(e)) for e in exc.errors]
    return "resources", [
        (
            r.kind,
            r.name,
            r.spec,
            r.file,
            r.index,
            type(r.locator).__name__,
            r.locator.source.name,  # type: ignore[attr-defined]
            r.locator.source.data,  # type: ignore[attr-defined]
            r.locator.source._index,  # type: ignore[attr-defined]
            r.locator.source._marks,  # type: ignore[attr-defined]
            r.locator.source.path,  # type: ignore[attr-defined]
            r.locator.source.size,  # type: ignore[attr-defined]
            r.locate("metadata", "name"),
            r.locate_spec("settings", "streaming_max_insert_wait_ms"),
        )
        for r in resources
    ]


def sequential(monkeypatch: pytest.MonkeyPatch, load: Callable[[], list[Resource]]) -> Any:
    with monkeypatch.context() as m:
        m.setenv("RECONCILE_LOAD_WORKERS", "1")
        return outcome(load)


@pytest.mark.parametrize("full_positions", [True, False], ids=["every-position", "name-marks"])
def test_parallel_read_should_equal_sequential_on_valid_manifests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, full_positions: bool
) -> None:
    monkeypatch.setattr(manifests, "FULL_POSITIONS", N if full_positions else 10)
    directory = valid_set(tmp_path / "m")

    def load() -> list[Resource]:
        return load_resources([directory], positions=True)

    expected = sequential(monkeypatch, load)
    assert spy.forks == []
    got = outcome(load)
    assert len(spy.forks) == 2
    assert len(spy.answers) == 2 and all(spy.answers)  # each worker read blocks, sent them
    assert got[0] == "resources" and len(got[1]) == N
    assert got == expected
    # The positions of a name-marks source are found by reading the file again: still lazy.
    assert all((row[8] is None) != full_positions for row in got[1])


def test_parallel_read_should_report_the_same_errors_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    directory = invalid_set(tmp_path / "m")
    limits = ManifestLimits(max_bytes=2500)

    def load() -> list[Resource]:
        return load_resources([directory], positions=True, limits=limits)

    expected = sequential(monkeypatch, load)
    got = outcome(load)
    assert len(spy.forks) == 2
    assert len(spy.answers) == 2 and all(spy.answers)
    assert got == expected
    messages = "\n".join(row[3] for row in got[1])
    # Errors that need a manifest read in another part name it.
    assert "duplicate Pipe name 'pipe-00004': also defined at " in messages
    assert "duplicate Pipe name 'pipe-00008': also defined at " in messages
    assert "is also addressed by Pipe/pipe-00021 at " in messages
    assert "pipe-00058.yaml: file is " in messages
    assert len(got[1]) >= 11


@pytest.mark.parametrize(
    "failure",
    [
        "exit-status",
        "killed",
        "truncated",
        "garbage",
        "raises",
        "first-of-two-raises",
        "one-block-garbled",
    ],
)
def test_a_failing_worker_should_lose_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy, failure: str
) -> None:
    directory = invalid_set(tmp_path / "m")

    def load() -> list[Resource]:
        return load_resources([directory], positions=True)

    expected = sequential(monkeypatch, load)

    real_send = workers._send

    def failing_send(result: object, out: BinaryIO) -> None:
        data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        if failure == "first-of-two-raises":
            if not spy.forks:  # the first worker was forked before any fork was counted
                raise RuntimeError("worker broke")
            real_send(result, out)
        if failure == "one-block-garbled":
            assert isinstance(result, dict) and result
            real_send({**result, min(result): b"\x80\x05junk"}, out)
        if failure == "exit-status":
            out.write(data)
            out.flush()
            os._exit(3)
        if failure == "killed":
            out.write(data[: len(data) // 3])
            out.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if failure == "truncated":
            out.write(data[: len(data) // 2])
        if failure == "garbage":
            out.write(b"not a pickle at all")
        if failure == "raises":
            raise RuntimeError("worker broke")

    monkeypatch.setattr(workers, "_send", failing_send)
    assert outcome(load) == expected
    assert len(spy.forks) == 2
    if failure == "first-of-two-raises":
        assert spy.answers[0] is None and spy.answers[1]
    elif failure == "one-block-garbled":
        assert all(spy.answers)  # answers arrived; their garbled blocks were read here
    else:
        assert spy.answers == [None, None]  # their blocks were all read here again
    assert_reaped(spy.forks)


def test_a_read_that_fails_here_should_end_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    directory = valid_set(tmp_path / "m")
    real_read = manifests._Reader.read

    def read(self: manifests._Reader, paths: Any) -> Any:
        if os.getpid() == parent:
            raise KeyboardInterrupt
        return real_read(self, paths)

    parent = os.getpid()
    monkeypatch.setattr(manifests._Reader, "read", read)
    with pytest.raises(KeyboardInterrupt):
        load_resources([directory])
    assert len(spy.forks) == 2
    assert_reaped(spy.forks)


def test_a_read_started_ahead_should_have_its_workers_reading_and_answer_as_load_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    directory = valid_set(tmp_path / "m")
    expected = sequential(monkeypatch, lambda: load_resources([directory], positions=True))
    reading = start_loading([directory], positions=True)
    assert len(spy.forks) == 2  # the workers were started before the answer is asked for
    assert outcome(reading.result) == expected
    assert_reaped(spy.forks)


def test_a_read_started_ahead_should_answer_alike_each_time_it_is_asked(
    tmp_path: Path, spy: Spy
) -> None:
    good = start_loading([valid_set(tmp_path / "good")])
    assert good.result() is good.result()
    bad = start_loading([invalid_set(tmp_path / "bad")], limits=ManifestLimits(max_bytes=2500))
    with pytest.raises(ManifestErrors) as first:
        bad.result()
    with pytest.raises(ManifestErrors) as second:
        bad.result()
    assert second.value is first.value


def test_a_read_started_ahead_and_abandoned_should_end_its_workers(
    tmp_path: Path, spy: Spy
) -> None:
    directory = valid_set(tmp_path / "m")
    with start_loading([directory]):
        assert len(spy.forks) == 2
    assert_reaped(spy.forks)
    reading = start_loading([directory])
    reading.close()
    reading.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match="closed before it was taken"):
        reading.result()
    assert len(spy.forks) == 4
    assert_reaped(spy.forks)


def test_no_worker_should_be_forked_while_another_thread_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    monkeypatch.setattr(workers, "can_fork", real_can_fork)
    directory = valid_set(tmp_path / "m", 20)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not workers.can_fork()
        assert len(load_resources([directory])) == 20
    finally:
        stop.set()
        thread.join()
    assert spy.forks == []


def test_a_single_threaded_process_should_read_many_manifests_in_workers(tmp_path: Path) -> None:
    directory = valid_set(tmp_path / "m", 12)
    script = f"""
import os
from reconciler.load import workers
from reconciler.load.manifests import load_resources, start_loading
workers.MIN_PER_PROCESS = 5
real_fork, made = os.fork, []
def fork():
    pid = real_fork()
    made.append(pid)
    return pid
workers.os.fork = fork
print(len(load_resources([{str(directory)!r}])), workers.can_fork(), made.count(0) == 0 and len(made))
"""
    env = {k: v for k, v in os.environ.items() if k != "RECONCILE_LOAD_WORKERS"}
    env["RECONCILE_LOAD_WORKERS"] = "2"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["12", "True", "1"]


@pytest.mark.parametrize(
    ("setting", "files", "expected"), [("1", 60, 0), ("3", 9, 0), ("3", 14, 1), ("3", 15, 2)]
)
def test_workers_should_be_forked_only_when_on_and_each_gets_enough_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    spy: Spy,
    setting: str,
    files: int,
    expected: int,
) -> None:
    monkeypatch.setenv("RECONCILE_LOAD_WORKERS", setting)
    directory = valid_set(tmp_path / "m", files)
    assert len(load_resources([directory])) == files
    assert len(spy.forks) == expected


@pytest.mark.parametrize("setting", ["0", "-2", "two", "1.5"])
def test_a_bad_worker_setting_should_be_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv("RECONCILE_LOAD_WORKERS", setting)
    with pytest.raises(ConfigError, match="RECONCILE_LOAD_WORKERS="):
        load_resources([valid_set(tmp_path / "m", 2)])


def test_parallel_read_inside_a_running_loop_should_leave_the_loop_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    directory = valid_set(tmp_path / "m")
    real_send = workers._send

    def detached_send(result: object, out: BinaryIO) -> None:
        # A worker shares neither the loop's wake-up fd nor its SIGINT handler.
        if signal.set_wakeup_fd(-1) != -1 or signal.getsignal(signal.SIGINT) != signal.SIG_DFL:
            os._exit(5)
        real_send(result, out)

    monkeypatch.setattr(workers, "_send", detached_send)

    async def main() -> int:
        ticks: list[int] = []
        asyncio.get_running_loop().call_later(0.01, ticks.append, 1)
        resources = load_resources([directory], positions=True)
        await asyncio.sleep(0.05)
        assert ticks == [1]
        return len(resources)

    assert asyncio.run(main()) == N
    assert len(spy.answers) == 2 and all(spy.answers)


@pytest.mark.parametrize(("count", "size"), [(0, 4), (1, 4), (23, 4), (24, 4), (9000, 4)])
def test_blocks_should_cover_every_item_once_in_order(count: int, size: int) -> None:
    spans = workers.blocks(count, size)
    assert [i for a, b in spans for i in range(a, b)] == list(range(count))
    assert len(spans) <= workers.MAX_BLOCKS
    assert all(b - a >= size for a, b in spans[:-1])
