"""Helpers for the manifest, schema and validate tests: valid documents and error capture."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from reconciler.load.manifests import load_resources
from reconciler.model.errors import ManifestErrors

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"

# A valid kafka pipe; line numbers matter to the tests that use it (line 1 is apiVersion).
KAFKA_PIPE = f"""\
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: orders
spec:
  organizationId: {ORG}
  serviceId: {SERVICE}
  pipeId: {PIPE}
  source:
    kafka:
      credentials:
        username: {{fromEnv: KAFKA_USER}}
        password: {{fromFile: secrets/kafka-password}}
      reversePrivateEndpointIds:
        - e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51
  settings:
    streaming_max_insert_wait_ms: 5000
    engine_max_threads: 4
"""

ORGANIZATION = f"""\
apiVersion: reconcile/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: {ORG}
  name: Acme Analytics
  privateEndpoints:
    - {{id: pe-0a1b2c3d4e5f, description: primary VPC}}
"""

DASHBOARD = """\
apiVersion: reconcile/v1
kind: Dashboard
metadata:
  name: overview
spec:
  name: Overview
  tiles:
    - {name: events, x: 0, y: 0, w: 12, h: 4, series: [{type: time, dataSource: events}]}
"""


def write(directory: Path, name: str, text: str | bytes) -> Path:
    """Write ``text`` to ``directory/name`` (creating folders) and return the path."""
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_lines(paths: Sequence[str | Path], **kwargs: str | None) -> list[str]:
    """Return the ``file:line:col: path: message`` lines of loading ``paths`` (none if valid)."""
    try:
        load_resources(paths, **kwargs)
    except ManifestErrors as exc:
        return [str(e) for e in exc.errors]
    return []


def replace_line(text: str, old: str, new: str) -> str:
    """Return ``text`` with the one line containing ``old`` replaced by ``new`` (same count)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def set_example_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set the variables ``manifests/.env.example`` names, as a user copying it to ``.env`` would."""
    example = Path(__file__).resolve().parent.parent / "manifests" / ".env.example"
    for line in example.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            monkeypatch.setenv(name, value)


# The example pipe without a pipeId (manifests/pipes/returns.yaml): created where the server
# can create pipes, an error on a spec-only server.
UNPINNED_EXAMPLE = Path("pipes") / "returns.yaml"


def example_manifests(tmp_path: Path, *, can_create: bool = True) -> Path:
    """Copy the repository's example manifests; without ``can_create``, leave out the example
    pipe a spec-only server cannot create."""
    import shutil

    target = tmp_path / "examples"
    shutil.copytree(Path(__file__).resolve().parent.parent / "manifests", target)
    if not can_create:
        (target / UNPINNED_EXAMPLE).unlink()
    return target
