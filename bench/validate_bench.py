"""Benchmark of manifest loading and validation (prints figures; asserts nothing).

Generates N realistic pipe manifests (default 1,000, all four source kinds, about 900 bytes
each) into a temporary directory and measures:

* ``reconcile validate DIR`` as a whole process (``python -m reconciler validate``), the
  figure a user sees, Python start-up included; median of 3 runs;
* ``load_resources`` in-process (fast C parse + schema validation);
* for reference, ruamel's round-trip loader alone on the same files.

Run from the repository root: ``python bench/validate_bench.py [--n 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"

HEADER = """\
# yaml-language-server: $schema=../schemas/pipe.schema.json
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: pipe-{i:05d}
  labels: {{tier: "{tier}"}}
spec:
  organizationId: {org}
  serviceId: {service}
  pipeId: {pipe_id}
  name: pipe number {i}
"""

SOURCES = [
    """\
  source:
    kafka:
      iamRole: arn:aws:iam::123456789012:role/pipes-{i}
      reversePrivateEndpointIds: [e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51]
      credentials:
        username: {{fromEnv: KAFKA_USER}}
        password: {{fromEnv: KAFKA_PASSWORD}}
      topics: orders-{i}
      consumerGroup: reconcile-{i}
      offset: {{strategy: from_latest}}
""",
    """\
  source:
    objectStorage:
      iamRole: arn:aws:iam::123456789012:role/archive-{i}
      path: "events/{i}/**/*.json.gz"
      accessKey:
        accessKeyId: {{fromEnv: STORAGE_KEY_ID}}
        secretKey: {{fromFile: secrets/storage-secret}}
      compression: gzip
      isContinuous: true
""",
    """\
  source:
    kinesis:
      iamRole: arn:aws:iam::123456789012:role/stream-{i}
      accessKey:
        accessKeyId: {{fromEnv: KINESIS_KEY_ID}}
        secretKey: {{fromEnv: KINESIS_SECRET}}
      streamName: clicks-{i}
      region: eu-west-1
""",
    """\
  source:
    postgres:
      host: db-{i}.internal
      port: 5432
      database: shop
      credentials:
        username: {{fromEnv: PG_USER}}
        password: {{fromEnv: PG_PASSWORD}}
      settings: {{syncIntervalSeconds: 30, pullBatchSize: 10000}}
      tableMappings:
        - {{sourceSchemaName: public, sourceTable: customers, targetTable: customers_{i}}}
        - {{sourceSchemaName: public, sourceTable: orders, targetTable: orders_{i}, tableEngine: ReplacingMergeTree}}
""",
]

FOOTER = """\
  destination:
    columns:
      - {{name: id, type: UInt64}}
      - {{name: created_at, type: "DateTime64(3)"}}
  fieldMappings:
    - {{sourceField: id, destinationField: id}}
    - {{sourceField: ts, destinationField: created_at}}
  settings:
    streaming_max_insert_wait_ms: {wait}
    engine_max_threads: {threads}
"""


def pipe_manifest(i: int) -> str:
    """Return the YAML text of the i-th generated pipe manifest."""
    pipe_id = f"0b5e7d1c-2a3f-4b6e-8c9d-{i:012x}"
    text = HEADER.format(i=i, tier=i % 3, org=ORG, service=SERVICE, pipe_id=pipe_id)
    text += SOURCES[i % 4].format(i=i)
    text += FOOTER.format(wait=1000 + (i % 50) * 100, threads=i % 64)
    return text


def generate(directory: Path, n: int) -> int:
    """Write ``n`` manifests under ``directory/pipes``; return the total size in bytes."""
    pipes = directory / "pipes"
    pipes.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(n):
        data = pipe_manifest(i).encode("utf-8")
        (pipes / f"pipe-{i:05d}.yaml").write_bytes(data)
        total += len(data)
    return total


def time_process(directory: Path, runs: int = 3) -> float:
    """Return the median wall time of ``reconcile validate DIR`` as a subprocess."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "reconciler", "validate", str(directory)],
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"reconcile validate failed with exit code {proc.returncode}")
    return statistics.median(times)


def time_in_process(directory: Path, runs: int = 3) -> float:
    """Return the median time of ``load_resources`` on ``directory``."""
    from reconciler.load.manifests import load_resources

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        load_resources([directory])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_round_trip(directory: Path) -> float:
    """Return the time of ruamel's round-trip loader alone over the same files."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    files = sorted(directory.rglob("*.yaml"))
    start = time.perf_counter()
    for path in files:
        list(yaml.load_all(path.read_bytes()))
    return time.perf_counter() - start


def main() -> None:
    """Generate the manifests, run the measurements and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of pipe manifests")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reconcile-bench-") as tmp:
        directory = Path(tmp)
        size = generate(directory, args.n)
        process = time_process(directory)
        in_process = time_in_process(directory)
        round_trip = time_round_trip(directory)
    n = args.n
    print(f"{n} pipe manifests, {size / 1e6:.2f} MB of YAML ({size / n:.0f} bytes each)")
    rows = [
        ("reconcile validate DIR (process, median of 3)", process),
        ("load_resources in-process (median of 3)", in_process),
        ("round-trip loader alone (reference)", round_trip),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'seconds':>8}  {'docs/s':>8}  {'vs rt':>6}")
    for label, seconds in rows:
        ratio = round_trip / seconds if seconds else 0.0
        print(f"{label:<{width}}  {seconds:8.3f}  {n / seconds:8.0f}  {ratio:5.1f}x")


if __name__ == "__main__":
    main()
