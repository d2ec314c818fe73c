"""Benchmark: the requests a quiet hour of ``reconcile watch --interval 1m`` costs (asserts nothing).

A quiet hour is one where nothing drifts. The run starts the emulator, applies the example
manifests, measures the ideal in the same run — the requests of one ``reconcile plan`` (the
reads one cycle cannot do without) — then runs ``watch`` in detect mode with a scaled interval
(``--interval 2s``, no jitter) for ``--cycles`` cycles and counts, from the emulator's own
request log, every request it made. An hour at 1m has 60 / (1 + mean jitter) cycles: 57.1 with
the default 10 % jitter (uniform 0–10 %, mean 5 %), so

    requests per quiet hour = (measured requests / measured cycles) × 57.1

and the ratio printed is measured requests ÷ (plan reads × cycles): 1.00 means the loop costs
nothing beyond the reads its plans need (the lease of a local state sends no request at all).

Run from the repository root: ``python bench/watch_quiet_hour.py [--cycles 20]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.cli import SECRET_ENV
from tests.support.emulator import start_emulator, stop_emulator

REPO = Path(__file__).resolve().parent.parent
CYCLES_PER_HOUR = 60 / 1.05  # --interval 1m with the default jitter (mean 5 %)


def main() -> None:
    """Print plan reads, watch requests per cycle, the ratio and the quiet-hour figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--interval", default="2s", help="the scaled interval of the run")
    cycles_wanted = parser.parse_args().cycles
    interval = parser.parse_args().interval
    emulator = start_emulator()
    work = Path(tempfile.mkdtemp(prefix="watch-bench-"))
    try:
        shutil.copytree(REPO / "manifests", work / "manifests")
        env = {**os.environ, **SECRET_ENV, **emulator.env(), "RECONCILE_CONFIG": os.devnull}
        state = str(work / "state.json")
        base = [sys.executable, "-m", "reconciler"]
        common = ["manifests", "--state", state, "--rate", "none"]
        subprocess.run(
            [*base, "apply", *common, "--auto-approve"],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
        )
        start = len(emulator.requests())
        subprocess.run([*base, "plan", *common], cwd=work, env=env, check=True, capture_output=True)
        plan_reads = len(emulator.requests()) - start

        start = len(emulator.requests())
        watch = subprocess.Popen(
            [
                *base,
                "watch",
                *common,
                "--interval",
                interval,
                "--jitter",
                "0",
                "--listen",
                "127.0.0.1:0",
            ],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert watch.stdout is not None
        cycles, lines = 0, []
        began = time.monotonic()
        for line in watch.stdout:
            lines.append(line.rstrip())
            if re.search(r"cycle \d+: ", line):
                cycles += 1
                if "in-sync" not in line:
                    print("unexpected cycle:", line.rstrip())
                if cycles >= cycles_wanted:
                    break
        watch.send_signal(signal.SIGTERM)
        watch.wait(timeout=30)
        elapsed = time.monotonic() - began
        made = len(emulator.requests()) - start
    finally:
        stop_emulator(emulator)
        shutil.rmtree(work, ignore_errors=True)
    per_cycle = made / cycles
    ideal = plan_reads * cycles
    print(f"plan reads (ideal per cycle):  {plan_reads}")
    print(
        f"watch cycles measured:         {cycles} in {elapsed:.1f} s (--interval {interval}, no jitter)"
    )
    print(f"watch requests measured:       {made}  ({per_cycle:.2f} per cycle)")
    print(f"ratio against the ideal:       {made / ideal:.2f}  (requests / (plan reads x cycles))")
    print(
        f"quiet hour at --interval 1m:   {per_cycle * CYCLES_PER_HOUR:.0f} requests "
        f"({CYCLES_PER_HOUR:.1f} cycles/h with the default 10 % jitter)"
    )


if __name__ == "__main__":
    main()
