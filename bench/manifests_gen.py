"""Manifests matching the emulator's scale seed, for benchmarks and scale tests.

The scale seed (``reconcile emulator --seed-pipes N --services S``) creates services
``bench-01`` … ``bench-SS`` and pipes ``pipe-00001`` … spread round-robin over them, cycling
through the four source kinds, with uuid5 ids derived from the index. ``write_manifests``
writes one Pipe manifest per seeded pipe (one file each, as a real repository would keep
them), naming its service by name (so the plan resolves it through the services list) or by
id, and — for the first ``changed`` pipes — one or two settings that differ from the seed, so
that the plan has exactly ``changed`` updates and apply sends exactly one write per change.

Usable as a script: ``python bench/manifests_gen.py DIR --pipes 100 --services 3 --changed 100``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Run as a script from the repository root or imported from tests: both find the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler.emulator.protocol import DEMO_ORG_ID
from reconciler.emulator.seed import KINDS, scale_ids, scale_service_id

# The seed's values are streaming_max_insert_wait_ms 5000 and engine_max_threads 4.
CHANGED_WAIT_MS = 6000
CHANGED_THREADS = 8

TEMPLATE = """\
# A scale-seed pipe ({kind} source) for benchmarks.
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: {name}
  labels: {{bench: scale}}
spec:
  organizationId: {org}
  {service_line}
  pipeId: {pipe_id}
  name: {name}
  scaling:
    replicas: 2
  fieldMappings:
    - {{sourceField: id, destinationField: id}}
    - {{sourceField: amount, destinationField: amount}}
    - {{sourceField: ts, destinationField: created_at}}
    - {{sourceField: updated, destinationField: updated_at}}
  settings:
{settings}"""


def pipe_manifest(index: int, services: int, *, changed: bool, by_name: bool = True) -> str:
    """Return the manifest text of scale-seed pipe ``index`` (1-based)."""
    name, pipe_id = scale_ids(index)
    service = (index - 1) % services + 1
    service_line = (
        f"service: bench-{service:02d}" if by_name else f"serviceId: {scale_service_id(service)}"
    )
    settings = {
        "streaming_max_insert_wait_ms": CHANGED_WAIT_MS if changed else 5000,
        "engine_max_threads": CHANGED_THREADS if changed and index % 2 == 0 else 4,
        "object_storage_max_file_count": 1000,
    }
    lines = "".join(f"    {key}: {value}\n" for key, value in settings.items())
    return TEMPLATE.format(
        kind=KINDS[(index - 1) % 4],
        name=name,
        org=DEMO_ORG_ID,
        service_line=service_line,
        pipe_id=pipe_id,
        settings=lines,
    )


def write_manifests(
    directory: Path, pipes: int, services: int, *, changed: int = 0, by_name: bool = True
) -> list[Path]:
    """Write one manifest per seeded pipe into ``directory``; the first ``changed`` differ."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(1, pipes + 1):
        path = directory / f"pipe-{index:05d}.yaml"
        text = pipe_manifest(index, services, changed=index <= changed, by_name=by_name)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--pipes", type=int, default=100)
    parser.add_argument("--services", type=int, default=3)
    parser.add_argument("--changed", type=int, default=0)
    parser.add_argument("--service-ids", action="store_true", help="Name services by id.")
    args = parser.parse_args()
    paths = write_manifests(
        args.directory,
        args.pipes,
        args.services,
        changed=args.changed,
        by_name=not args.service_ids,
    )
    print(f"wrote {len(paths)} manifests to {args.directory}")


if __name__ == "__main__":
    main()
