"""Benchmark: the resident memory of a long ``reconcile watch`` (prints figures and PASS/FAIL).

A watch is meant to run for weeks, so its resident memory must reach a plateau. The run starts
the emulator, applies the example manifests once (every later cycle is in sync), then runs
``reconcile watch`` as a user does — a child process, detect mode, here with a scaled interval
(``--interval 10ms``, no jitter) — for ``--cycles`` cycles and samples the child's ``VmRSS``
(``/proc/PID/status``) as each cycle's log line arrives, beside its open file descriptors and
threads. The figures printed: RSS at cycle 50 (start-up and the first cycles' caches are
settled by then) and at the end, the growth between the two and per cycle, and PASS when the
growth is at most 2 MB. A month at ``--interval 5m`` is ~8,600 cycles: 1 KB a cycle kept for
good would be 8.6 MB; the garbage of every cycle kept (as plans once did) was ~170 KB a cycle.

``--state postgres`` keeps the state in a throwaway PostgreSQL cluster started here (its
lease is renewed every third of ``--lease`` meanwhile); ``--failing`` makes every management
request answer 500, so that every cycle fails (one attempt per request, ``--max-attempts 1``:
the retries' waits would make a cycle last seconds; the next cycle backs off by at most the
interval).

Run from the repository root: ``python bench/watch_memory.py [--cycles 500] [--state postgres]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.cli import SECRET_ENV  # noqa: E402
from tests.support.emulator import start_emulator, stop_emulator  # noqa: E402

TARGET_MB = 2.0
SETTLED = 50  # the cycle whose RSS is the baseline
_CYCLE = re.compile(r"cycle (\d+): (\S+?);")


@dataclass
class Figures:
    """What the run measured: samples are (RSS in KB, open fds, threads)."""

    cycles: int = 0
    seconds: float = 0.0
    results: dict[str, int] = field(default_factory=dict)
    settled: tuple[int, int, int] = (0, 0, 0)
    last: tuple[int, int, int] = (0, 0, 0)


def sample(pid: int) -> tuple[int, int, int]:
    """Return the process's resident memory (KB), open file descriptors and threads."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


@contextlib.contextmanager
def state_address(kind: str, work: Path) -> Iterator[str]:
    """The ``--state`` address of the run: a local file, or a throwaway PostgreSQL cluster."""
    if kind == "local":
        yield str(work / "state.json")
        return
    from tests.support.state_servers import running_postgres

    with running_postgres() as server:
        yield server.url


def main() -> None:
    """Run the watch, print RSS at cycle 50 and at the end, the growth and PASS/FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=500, help="cycles to run (more than 50)")
    parser.add_argument("--interval", default="10ms", help="the scaled interval of the run")
    parser.add_argument("--state", choices=("local", "postgres"), default="local")
    parser.add_argument("--failing", action="store_true", help="every management request 500s")
    args = parser.parse_args()
    if args.cycles <= SETTLED:
        parser.error(f"--cycles must be more than {SETTLED}")
    emulator = start_emulator()
    work = Path(tempfile.mkdtemp(prefix="watch-memory-"))
    try:
        with state_address(args.state, work) as state:
            shutil.copytree(ROOT / "manifests", work / "manifests")
            env = {**os.environ, **SECRET_ENV, **emulator.env(), "RECONCILE_CONFIG": os.devnull}
            base = [sys.executable, "-m", "reconciler"]
            common = ["manifests", "--state", state, "--rate", "none"]
            apply = [*base, "apply", *common, "--auto-approve", "--new-state"]
            subprocess.run(apply, cwd=work, env=env, check=True, capture_output=True)
            if args.failing:
                emulator.configure(faultRate=1.0)
            figures = run_watch(base, common, args, work, env)
    finally:
        stop_emulator(emulator)
        shutil.rmtree(work, ignore_errors=True)
    report(figures, args)


def run_watch(
    base: list[str], common: list[str], args: argparse.Namespace, work: Path, env: dict[str, str]
) -> Figures:
    """Run ``reconcile watch`` for ``args.cycles`` cycles; return the samples taken."""
    argv = [*base, "watch", *common, "--interval", args.interval, "--jitter", "0"]
    if args.failing:
        argv += ["--max-attempts", "1"]
    watch = subprocess.Popen(
        [*argv, "--listen", "127.0.0.1:0"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert watch.stdout is not None
    figures, began = Figures(), time.monotonic()
    tail: list[str] = []
    try:
        for line in watch.stdout:
            tail = [*tail[-5:], line.rstrip()]
            match = _CYCLE.search(line)
            if match is None:
                continue
            figures.cycles = int(match.group(1))
            figures.results[match.group(2)] = figures.results.get(match.group(2), 0) + 1
            figures.last = sample(watch.pid)
            if figures.cycles == SETTLED:
                figures.settled = figures.last
            if figures.cycles >= args.cycles:
                break
    finally:
        watch.send_signal(signal.SIGTERM)
        try:
            watch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait()
    if figures.cycles < args.cycles:
        sys.exit(f"watch ended after {figures.cycles} cycles: {' | '.join(tail)}")
    figures.seconds = time.monotonic() - began
    return figures


def report(figures: Figures, args: argparse.Namespace) -> None:
    """Print the samples, the growth and the verdict."""
    cycles, seconds = figures.cycles, figures.seconds
    (rss0, fds0, threads0), (rss1, fds1, threads1) = figures.settled, figures.last
    growth = (rss1 - rss0) / 1024
    per_cycle = (rss1 - rss0) / (cycles - SETTLED)
    print(
        f"watch --interval {args.interval} --jitter 0, {args.state} state"
        f"{', every request failing' if args.failing else ''}: {cycles} cycles in {seconds:.0f} s"
        f" {figures.results}"
    )
    print(f"RSS at cycle {SETTLED}:   {rss0 / 1024:7.1f} MB  ({fds0} fds, {threads0} threads)")
    print(f"RSS at cycle {cycles}:  {rss1 / 1024:7.1f} MB  ({fds1} fds, {threads1} threads)")
    print(f"growth:          {growth:+7.1f} MB  ({per_cycle:+.1f} KB per cycle)")
    verdict = "PASS" if growth <= TARGET_MB else "FAIL"
    print(f"{verdict}: growth {growth:+.1f} MB (target <= {TARGET_MB:g} MB)")


if __name__ == "__main__":
    main()
