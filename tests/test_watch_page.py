"""The watch endpoint as an ASGI app (httpx.ASGITransport): health and readiness codes follow
the loop and the last cycle; the status page describes each row state (in sync, drifted since,
corrected at, failed with message) at its manifest file:line and escapes every value;
/api/status matches its schema; /metrics is Prometheus text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.watch.metrics import WatchMetrics
from reconciler.watch.server import build_app, render_page
from reconciler.watch.status import (
    Cycle,
    CycleResult,
    ResourceRow,
    ResourceState,
    WatchStatus,
)

REPO = Path(__file__).resolve().parent.parent
T0 = 1_790_000_000.0  # 2026-09-21T14:13:20Z


def _status(*rows: ResourceRow, last: CycleResult | None = CycleResult.IN_SYNC) -> WatchStatus:
    status = WatchStatus(mode="correct", interval=60, state="state.json", workspace="default")
    status.running, status.leader, status.lease_checked = True, True, True
    for row in rows:
        status.resources[row.key] = row
    if last is not None:
        status.cycles.append(Cycle(1, T0, last, 0.5, message="boom" if last == "failed" else ""))
    return status


def _get(status: WatchStatus, path: str) -> httpx.Response:
    metrics = WatchMetrics()

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=build_app(status, metrics.render))
        async with httpx.AsyncClient(transport=transport, base_url="http://watch") as client:
            return await client.get(path)

    return asyncio.run(call())


@pytest.mark.parametrize(
    ("row", "shown"),
    [
        (ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6"), "in sync"),
        (
            ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6", ResourceState.DRIFTED, "update", T0),
            "drifted since 2026-09-21T14:13:20Z (update)",
        ),
        (
            ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6", ResourceState.CORRECTED, corrected_at=T0),
            "corrected at 2026-09-21T14:13:20Z",
        ),
        (
            ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6", ResourceState.FAILED, message="409 busy"),
            "failed: 409 busy",
        ),
        (
            ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6", corrected_at=T0),
            "in sync (corrected at 2026-09-21T14:13:20Z)",
        ),
    ],
)
def test_each_row_state_reads_plainly_with_its_manifest_location(
    row: ResourceRow, shown: str
) -> None:
    page = render_page(_status(row))
    assert f"<td>Pipe/a</td><td class='{row.state}'>{shown}</td><td>m/a.yaml:6</td>" in page


def test_every_value_on_the_page_is_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    row = ResourceRow(
        f"Pipe/{hostile}", "Pipe", f"{hostile}.yaml:1", ResourceState.FAILED, message=hostile
    )
    page = render_page(_status(row))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize(
    ("running", "last", "healthz", "readyz"),
    [
        (True, CycleResult.IN_SYNC, 200, 200),
        (True, CycleResult.DRIFT, 200, 200),
        (True, CycleResult.FAILED, 200, 503),
        (True, CycleResult.INVALID, 200, 503),
        (True, None, 200, 503),
        (False, CycleResult.IN_SYNC, 503, 503),
    ],
)
def test_health_and_readiness_follow_the_loop_and_the_last_cycle(
    running: bool, last: CycleResult | None, healthz: int, readyz: int
) -> None:
    status = _status(last=last)
    status.running = running
    assert _get(status, "/healthz").status_code == healthz
    ready = _get(status, "/readyz")
    assert ready.status_code == readyz
    if readyz == 503:
        assert ready.text.startswith("not ready: ")


def test_api_status_matches_its_schema_and_metrics_parse() -> None:
    row = ResourceRow("Pipe/a", "Pipe", "m/a.yaml:6", ResourceState.DRIFTED, "update", T0)
    document = _get(_status(row, last=CycleResult.DRIFT), "/api/status").json()
    schema = json.loads((REPO / "schemas" / "watch-status.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert document["resources"][0]["driftedSince"] == "2026-09-21T14:13:20Z"
    metrics = _get(_status(), "/metrics")
    names = {f.name for f in text_string_to_metric_families(metrics.text)}
    assert {"reconcile_watch_cycles", "reconcile_watch_leader"} <= names
