"""What a watch shows while its cycles are invalid (the loop in-process, the page and
``/api/status`` rendered from its status): every manifest error at its ``file:line:col``, each
resource an earlier cycle knew as "unknown since" the first invalid cycle (never still green "in
sync"), and the environment, organization and workspace the watch reconciles."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema

from reconciler.model.errors import Location, ManifestError, ManifestErrors
from reconciler.state.backend import Holder
from reconciler.state.local import LocalLease
from reconciler.watch import Watcher, WatchOptions, WatchStatus
from reconciler.watch.loop import Target
from reconciler.watch.server import render_page
from reconciler.watch.status import ResourceRow, ResourceState, iso

REPO = Path(__file__).resolve().parent.parent
ORG = "5d2f8e1a-6b3c-4d7e-9f0a-1b2c3d4e5f60"


def _invalid_watch(tmp_path: Path) -> tuple[Watcher, WatchStatus]:
    errors = ManifestErrors(
        [ManifestError(Location("m/pipes/a.yaml", 7, 5), "spec.name", "must be a string")]
    )

    def load(reload: bool) -> Target:
        raise errors

    status = WatchStatus(
        mode="detect",
        interval=10,
        state="state.json",
        workspace="staging",
        environment="staging",
        organization=ORG,
    )
    status.running, status.leader, status.lease_checked = True, True, True
    # What an earlier, valid cycle found: both in sync.
    status.resources["Pipe/a"] = ResourceRow("Pipe/a", "Pipe", "m/pipes/a.yaml:6")
    status.resources["Dashboard/d"] = ResourceRow("Dashboard/d", "Dashboard", "m/d.yaml:5")
    lease = LocalLease(tmp_path / "state.json", Holder.current("test"))
    options = WatchOptions(interval=10, jitter=0)
    return Watcher(load, lease, options, status), status  # type: ignore[arg-type]


def test_resources_are_unknown_since_the_first_invalid_cycle(tmp_path: Path) -> None:
    watcher, status = _invalid_watch(tmp_path)
    asyncio.run(watcher._one_cycle())
    first = status.cycles[-1].started
    asyncio.run(watcher._one_cycle())
    for row in status.resources.values():
        assert row.state is ResourceState.UNKNOWN
        assert row.describe() == f"unknown since {iso(first)} (the manifests are invalid)"
    document = status.document()
    assert {r["state"] for r in document["resources"]} == {"unknown"}  # type: ignore[index]
    assert {r["unknownSince"] for r in document["resources"]} == {iso(first)}  # type: ignore[index]
    assert document["invalidSince"] == iso(first)
    assert document["manifestErrors"] == [
        {"location": "m/pipes/a.yaml:7:5", "path": "spec.name", "message": "must be a string"}
    ]
    assert (document["environment"], document["organizationId"]) == ("staging", ORG)
    schema = json.loads((REPO / "schemas" / "watch-status.schema.json").read_text())
    jsonschema.validate(document, schema)


def test_the_page_says_the_cycles_are_invalid_and_what_it_watches(tmp_path: Path) -> None:
    watcher, status = _invalid_watch(tmp_path)
    asyncio.run(watcher._one_cycle())
    page = render_page(status)
    assert "m/pipes/a.yaml:7:5" in page
    assert "The manifests are invalid since" in page
    assert "unknown since" in page
    assert "in sync" not in page
    assert "Environment</dt><dd id='environment'>staging" in page
    assert f"Organization</dt><dd id='organization'>{ORG}" in page
    assert "Workspace</dt><dd id='workspace'>staging" in page
