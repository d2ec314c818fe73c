"""Benchmark of an environment's loading: base manifests plus overlays (prints; asserts nothing).

Generates N pipe manifests (``validate_bench``'s, default 1,000) and an overlay directory that
patches one in ten of them (one setting each), then measures in-process, median of 5 rounds in which the two alternate:

* ``load_resources`` of the base alone, with every position recorded (the ideal: what an
  environment without overlays costs a plan);
* ``load_layered`` of the base with the overlay, as a plan loads it (parse both, merge,
  validate the merged documents, track each value's origin);

and prints the ratio of the second to the first.

Run from the repository root: ``python bench/overlays_bench.py [--n 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validate_bench import generate

from reconciler.load.manifests import load_resources
from reconciler.load.overlays import Layering, load_layered

PATCH = """\
kind: Pipe
metadata:
  name: pipe-{i:05d}
spec:
  settings:
    engine_max_threads: 2
"""


def interleaved(runs: int, *works: Callable[[], object]) -> list[float]:
    """Return each work's median wall time over ``runs`` rounds, the works alternating in each
    round (so a busy moment of a shared machine falls on both)."""
    times: list[list[float]] = [[] for _ in works]
    for _ in range(runs):
        for slot, work in zip(times, works, strict=True):
            start = time.perf_counter()
            work()
            slot.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, overlay = Path(tmp) / "base", Path(tmp) / "overlay"
        base.mkdir()
        overlay.mkdir()
        generate(base, args.n)
        patches = range(0, args.n, 10)
        for i in patches:
            (overlay / f"p{i:05d}.yaml").write_text(PATCH.format(i=i), encoding="utf-8")
        plain, layered = interleaved(
            5,
            lambda: load_resources([base], positions=True),
            lambda: load_layered([base], Layering((str(overlay),)), written=False),
        )
    print(f"{args.n} manifests, {len(patches)} patched by an overlay")
    print(f"load_resources (base only, positions): {plain * 1000:8.1f} ms")
    print(f"load_layered (base + overlay):         {layered * 1000:8.1f} ms")
    print(f"ratio layered / base only:             {layered / plain:8.2f}x")


if __name__ == "__main__":
    main()
