"""Helpers for the manifest, schema and validate tests: valid documents, error capture, and
``EXAMPLES``: a private copy of the example manifests the repository ships.

Tests never read the repository's ``manifests/`` directly: a user may keep manifests of their
own there, and those must change no test's result. ``EXAMPLES`` holds only the files git
tracks under ``manifests/`` (all of them when the tree is not a git checkout), copied once per
test process into a temporary directory that is removed at exit.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from reconciler.load.manifests import load_resources
from reconciler.model.errors import ManifestErrors

REPO = Path(__file__).resolve().parents[2]


def shipped_example_files(repo: Path = REPO) -> list[str]:
    """The example manifests' paths relative to ``repo/manifests``: the files git tracks there."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--", "manifests"],
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):  # not a checkout: take the directory as is
        root = repo / "manifests"
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return sorted(name.removeprefix("manifests/") for name in listed.split("\0") if name)


@functools.cache
def example_manifests() -> Path:
    """Return the private copy of the shipped example manifests (made on first use)."""
    top = Path(tempfile.mkdtemp(prefix="reconcile-examples-"))
    atexit.register(shutil.rmtree, top, True)
    shutil.copytree(REPO / "schemas", top / "schemas")  # where the files' modelines point
    copy = top / "manifests"
    for name in shipped_example_files():
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / "manifests" / name, target)
    return copy


EXAMPLES = example_manifests()

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
    example = EXAMPLES / ".env.example"
    for line in example.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            monkeypatch.setenv(name, value)


# The example pipe without a pipeId (manifests/pipes/returns.yaml): created where the server
# can create pipes, an error on a spec-only server.
UNPINNED_EXAMPLE = Path("pipes") / "returns.yaml"


def example_copy(tmp_path: Path, *, can_create: bool = True) -> Path:
    """Copy the example manifests (``EXAMPLES``) into ``tmp_path``; without ``can_create``,
    leave out what a spec-only server cannot take (``spec_only_examples``)."""
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target)
    if not can_create:
        spec_only_examples(target)
    return target


def spec_only_examples(target: Path) -> None:
    """Leave out of a copy of the examples what a spec-only server cannot take: the example
    pipe it cannot create, the example endpoint and CDC scaling (it has neither operation)."""
    (target / UNPINNED_EXAMPLE).unlink()
    shutil.rmtree(target / "endpoints")
    shutil.rmtree(target / "cdc")


# What applying the examples ends with on a server that has the extensions (the example pipe
# without pipeId created; the example endpoint adopted and the CDC scaling already as stated:
# unchanged) and on a spec-only one.
EXAMPLES_APPLIED = "10 applied, 2 unchanged, 0 failed."
SPEC_ONLY_EXAMPLES_APPLIED = "9 applied, 0 failed."
