"""What state writes cost a 1,000-pipe apply, per backend (prints figures; asserts nothing).

For each backend — local file, PostgreSQL (a throwaway cluster started here) and S3-compatible
(moto_server started here) — an emulator is seeded with N pipes, manifests changing all N are
written, and ``reconcile apply --state ADDRESS`` runs as a child process whose backend
``write`` is wrapped to count the writes and sum their time. Two paces:

- ``none``: ``--rate none`` against an unlimited emulator (raw speed: writes pile up and are
  coalesced, so the fraction of wall is at its highest here);
- ``100/1``: both sides limited to 100 requests/s (actions finish ~10 ms apart; most writes
  are separate).

Ratio = time inside state writes ÷ apply wall, target ≤ 0.10; "vs ideal" = wall ÷ the wall of
the same apply with state writes skipped (the first rows), measured in the same run. Pipe records are written off the
event loop (a worker thread, coalesced) so their time overlaps the requests; the ratio counts
it in full anyway. At the default 10/10 budget an apply of N changed pipes takes about N
seconds (one write per second); the projection printed beneath uses one state write per
action at the mean cost measured at 100/1, over that wall.

Run from the repository root: ``python bench/state_backends.py [--quick]`` (100 pipes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.plan_scale import CHILD_ENV, Emulator, manifests, prepare_bytecode  # noqa: E402
from tests.support.state_servers import running_postgres, running_s3  # noqa: E402

# Runs ``reconcile`` with the backend's write timed; the figures go to argv[1] at exit.
WRAPPER = """
import atexit, importlib, json, sys, time
out, module, cls_name = sys.argv[1:4]
cls = getattr(importlib.import_module(
    "reconciler.state.local" if module == "none" else module), cls_name)
stats = {"writes": 0, "seconds": 0.0, "bytes": 0, "slowest": 0.0}
original = cls.write
if module == "none":
    original = lambda self, data, expected: expected  # the ideal: no state stored at all
def write(self, data, expected):
    start = time.perf_counter()
    try:
        return original(self, data, expected)
    finally:
        spent = time.perf_counter() - start
        stats["writes"] += 1
        stats["seconds"] += spent
        stats["bytes"] = len(data)
        stats["slowest"] = max(stats["slowest"], spent)
cls.write = write
atexit.register(lambda: open(out, "w").write(json.dumps(stats)))
from reconciler.cli import main
main(sys.argv[4:])
"""

CLASSES = {
    "no writes": ("none", "LocalBackend"),
    "local": ("reconciler.state.local", "LocalBackend"),
    "postgresql": ("reconciler.state.postgres", "PostgresBackend"),
    "s3": ("reconciler.state.s3", "S3Backend"),
}


def run_apply(
    kind: str, address: str, env: dict[str, str], n: int, work: Path, limit: str | None
) -> dict[str, Any]:
    """Apply N changed pipes with the state at ``address``; return wall and write figures."""
    flags = ["--rate-limit", limit] if limit else []
    emulator = Emulator("--seed-pipes", str(n), "--services", "3", *flags)
    try:
        path = manifests(work, n, 3, changed=n)
        stats_file = work / f"stats-{uuid.uuid4().hex[:6]}.json"
        module, cls = CLASSES[kind]
        args = ["apply", path, "--auto-approve", "--state", address, "--rate", limit or "none"]
        args += ["--workspace", f"bench{uuid.uuid4().hex[:8]}"]
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(stats_file), module, cls, *args],
            env={**CHILD_ENV, **emulator.env, **env, "NO_COLOR": "1"},
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"apply on {kind} exited {done.returncode}:\n{done.stderr[-3000:]}")
        stats: dict[str, Any] = json.loads(stats_file.read_text())
        stats["wall"] = wall
        stats["requests"] = len(emulator.requests())
        return stats
    finally:
        emulator.stop()


@contextlib.contextmanager
def stores(work: Path) -> Iterator[dict[str, tuple[str, dict[str, str]]]]:
    """Yield each backend's address and environment (servers stopped afterwards)."""
    with running_postgres() as pg, running_s3() as s3:
        yield {
            "no writes": (str(work / "ideal.json"), {}),
            "local": (str(work / "state.json"), {}),
            "postgresql": (pg.url, {}),
            "s3": (f"s3://{s3.bucket}/bench/state.json", s3.env()),
        }


def main() -> None:
    """Run every backend at both paces and print the table and the projection."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="100 pipes instead of 1,000")
    n = 100 if parser.parse_args().quick else 1000
    prepare_bytecode()
    header = ("backend", "pace", "N", "wall s", "vs ideal", "writes", "write s", "ratio", "verdict")
    print("  ".join(f"{h:>10}" for h in header))
    projections = []
    with tempfile.TemporaryDirectory(prefix="reconcile-bench-") as tmp, stores(Path(tmp)) as all_:
        work = Path(tmp)
        ideal: dict[str | None, float] = {}
        for kind, (address, env) in all_.items():
            for pace in (None, "100/1"):
                s = run_apply(kind, address, {**os.environ, **env}, n, work, pace)
                ideal.setdefault(pace, s["wall"])
                ratio = s["seconds"] / s["wall"]
                row = (
                    kind,
                    pace or "none",
                    f"{n:,}",
                    f"{s['wall']:.2f}",
                    f"{s['wall'] / ideal[pace]:.2f}x",
                    str(s["writes"]),
                    f"{s['seconds']:.2f}",
                    f"{ratio:.3f}",
                    "ok" if ratio <= 0.10 else "OVER 10%",
                )
                print("  ".join(f"{c:>10}" for c in row), flush=True)
                if pace and kind != "no writes":
                    mean = s["seconds"] / max(1, s["writes"])
                    projected_wall = s["requests"] / 1.0  # 10 requests per 10 s
                    projections.append(
                        f"{kind}: {n:,} writes x {mean * 1000:.1f} ms = {n * mean:.1f} s of "
                        f"~{projected_wall:,.0f} s wall at 10/10 -> {n * mean / projected_wall:.3%}"
                    )
    print(f"\nDocument size at the end: {s['bytes'] / 1024:.0f} KB. 'vs ideal': wall / the same")
    print("apply with state writes skipped ('no writes'), measured in this run.")
    print("\nProjected at the default budget (10/10; one state write per action):")
    for line in projections:
        print("  " + line)


if __name__ == "__main__":
    main()
