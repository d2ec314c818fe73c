"""`reconcile watch`'s status lists reverse private endpoints and CDC capacity beside pipes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Emulator
from tests.watch_helpers import watching_applied_project


def test_status_lists_the_endpoint_and_cdc_scaling_of_the_example_project(
    emulator: Emulator, tmp_path: Path
) -> None:
    watch, _, _ = watching_applied_project(emulator, tmp_path)
    try:
        watch.wait_for_line(r"cycle 1: in-sync")
        rows = {r["resource"]: r for r in watch.status()["resources"]}
        page = watch.get("/").text
    finally:
        assert watch.terminate() == 0
    endpoint = rows["ReversePrivateEndpoint/orders-brokers"]
    assert endpoint["state"] == "in-sync"
    assert endpoint["location"].startswith("manifests/endpoints/orders-brokers.yaml:")
    assert rows["CdcScaling/analytics-cdc"]["state"] == "in-sync"
    assert "ReversePrivateEndpoint/orders-brokers" in page
