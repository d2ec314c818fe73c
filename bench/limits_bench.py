"""Benchmark of the manifest limits: ``reconcile validate`` on hostile files (asserts nothing).

Rows: the 8-level ten-way alias bomb of issue 14 (``10 ** 8`` nodes if expanded), 100,000
nested flow sequences, and — the ideal measured in the same run — one ordinary pipe manifest.
Each is a whole ``python -m reconciler validate FILE`` process (median of 3), so the ratio is
what the limits cost beyond start-up. The bomb's target is at most 1 s.

Run from the repository root: ``python bench/limits_bench.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.hostile_manifests import HEAD, alias_bomb, deep_nesting


def time_validate(path: Path, runs: int = 3) -> tuple[float, int]:
    """Return the median wall time and the exit code of ``reconcile validate PATH``."""
    times = []
    code = 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "reconciler", "validate", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
        code = proc.returncode
    return statistics.median(times), code


def main() -> None:
    """Write the files, time each validate and print a table."""
    with tempfile.TemporaryDirectory(prefix="reconcile-limits-") as tmp:
        directory = Path(tmp)
        files = {
            "ordinary pipe manifest (ideal)": HEAD,
            "alias bomb, 8 levels x 10 (1e8 nodes)": alias_bomb(8, 10),
            "flow nesting, 100,000 levels": deep_nesting(100_000),
        }
        rows = []
        for i, (label, text) in enumerate(files.items()):
            path = directory / f"f{i}.yaml"
            path.write_text(text, encoding="utf-8")
            rows.append((label, *time_validate(path)))
    ideal = rows[0][1]
    width = max(len(r[0]) for r in rows)
    print(f"{'reconcile validate FILE (median of 3)':<{width}}  {'seconds':>8}  exit  vs ideal")
    for label, seconds, code in rows:
        print(f"{label:<{width}}  {seconds:8.3f}  {code:>4}  {seconds / ideal:7.2f}x")


if __name__ == "__main__":
    main()
