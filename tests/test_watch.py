"""``reconcile watch`` as real processes against the emulator: drift made through the API is
reported in detect mode (metrics, status page, JSON; nothing written) and corrected in correct
mode within one interval; an invalid manifest sends nothing and is shown at its file:line; the
status page is read back from headless chromium; /metrics parses; a second watch on a held local
state refuses to start, naming the holder; an unreachable server is a failed cycle of 0 requests;
the status lists reverse private endpoints and CDC capacity beside pipes.
(SIGTERM: test_watch_sigterm.)"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import jsonschema
from prometheus_client.parser import text_string_to_metric_families

from reconciler.state.backend import Holder
from reconciler.state.local import LocalLease
from tests.support.cli import SECRET_ENV, writes
from tests.support.emulator import Emulator
from tests.support.watch import (
    REPO,
    WATCH_FAST,
    WatchProcess,
    applied_project,
    correcting_watch,
    drift_orders,
    orders_wait_ms,
    project,
    rendered_table,
    watching_applied_project,
)


def _metrics(watch: WatchProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = watch.get("/metrics")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def _row(rows: list[list[str]], resource: str) -> list[str]:
    return next(r for r in rows if r and r[0] == resource)


def test_detect_mode_reports_drift_made_through_the_api_and_writes_nothing(
    emulator: Emulator, tmp_path: Path
) -> None:
    watch, _, _ = watching_applied_project(emulator, tmp_path)
    try:
        watch.wait_for_line(r"cycle 1: in-sync")
        assert watch.get("/readyz").status_code == 200
        drift_orders(emulator)
        before = len(emulator.requests())
        watch.wait_for_line(r"cycle \d+: drift; changes found 1, corrected 0")
        document = watch.status()
        orders = next(r for r in document["resources"] if r["resource"] == "Pipe/orders")
        assert orders["state"] == "drifted" and orders["driftedSince"]
        assert orders["location"] == "manifests/pipes/orders.yaml:6"
        found = _metrics(watch)
        assert found[("reconcile_watch_drift_found_total", (("kind", "Pipe"),))] >= 1
        assert found[("reconcile_watch_cycles_total", (("result", "drift"),))] >= 1
        assert found[("reconcile_watch_leader", ())] == 1
        rows = rendered_table(watch.url + "/", "resources")
        assert rows[0] == ["Resource", "Status", "Manifest"]
        assert _row(rows, "Pipe/orders")[1].startswith("drifted since ")
        assert _row(rows, "Pipe/clickstream")[1] == "in sync"
        print("detect rows:", *rows, sep="\n  ")
        assert writes(emulator.requests()[before:]) == []
        assert orders_wait_ms(emulator) == 5000
        served = "".join(watch.get(p).text for p in ("/", "/api/status", "/metrics"))
    finally:
        assert watch.terminate() == 0
    text = "\n".join(watch.lines) + served
    assert all(secret not in text for secret in [*SECRET_ENV.values(), emulator.key_secret])


def test_correct_mode_corrects_drift_within_one_interval(
    emulator: Emulator, tmp_path: Path
) -> None:
    watch = correcting_watch(emulator, tmp_path, "--log-format", "json")
    try:
        watch.wait_for_line(r'"result": "in-sync"')
        drift_orders(emulator)
        line = watch.wait_for_line(r'"event": "cycle".*"result": "corrected"').string
        record = json.loads(line)
        assert record["changesFound"] == 1 and record["changesCorrected"] == 1
        assert record["requests"] > 0 and record["durationSeconds"] > 0
        assert orders_wait_ms(emulator) == 7500
        rows = rendered_table(watch.url + "/", "resources")
        print("correct rows:", *rows, sep="\n  ")
        assert _row(rows, "Pipe/orders")[1].startswith(("corrected at ", "in sync (corrected at "))
        found = _metrics(watch)
        assert found[("reconcile_watch_drift_corrected_total", (("kind", "Pipe"),))] == 1
        assert found[("reconcile_watch_cycles_total", (("result", "corrected"),))] == 1
        assert found[("reconcile_watch_last_success_timestamp_seconds", ())] > 0
        assert found[("reconcile_watch_cycle_duration_seconds_count", ())] >= 2
        # The run families of --metrics-file, for the latest cycle.
        assert found[("reconcile_run_success", (("command", "watch"),))] == 1
        assert found[("reconcile_last_success_timestamp_seconds", (("command", "watch"),))] > 0
        assert ("reconcile_requests", (("command", "watch"), ("interface", "management"))) in found
        schema = json.loads((REPO / "schemas" / "watch-status.schema.json").read_text())
        jsonschema.validate(watch.status(), schema)
    finally:
        assert watch.terminate() == 0


def test_an_invalid_manifest_sends_nothing_and_is_shown_at_its_file_and_line(
    emulator: Emulator, tmp_path: Path
) -> None:
    directory, state = applied_project(emulator, tmp_path)
    manifest = directory / "manifests" / "pipes" / "orders.yaml"
    manifest.write_text(
        manifest.read_text().replace("engine_max_threads: 8", "engine_max_threads: <b>x</b>")
    )
    lines = manifest.read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if "<b>x</b>" in text)
    where = f"manifests/pipes/orders.yaml:{line}"
    drift_orders(emulator)
    before = len(emulator.requests())
    args = ["manifests", "--state", state, *WATCH_FAST, "--mode", "correct"]
    watch = WatchProcess(args, directory, emulator.env()).start()
    try:
        watch.wait_for_line(r"cycle 2: invalid")
        assert emulator.requests()[before:] == []
        document = watch.status()
        error = document["cycles"][0]["errors"][0]
        assert f"{error['file']}:{error['line']}" == where
        assert document["ready"] is False
        ready = watch.get("/readyz")
        assert ready.status_code == 503 and "invalid" in ready.text
        rows = rendered_table(watch.url + "/", "errors")
        assert rows[1][0] == f"{where}:{error['col']}"  # file:line:col
        assert "<b>x</b>" not in watch.get("/").text  # escaped, never markup
        assert watch.wait_for_line(re.escape(where))
    finally:
        assert watch.terminate() == 0
    assert orders_wait_ms(emulator) == 5000


def test_a_second_watch_on_a_held_local_state_refuses_before_printing_its_start_line(
    emulator: Emulator, tmp_path: Path
) -> None:
    directory = project(tmp_path)
    state = directory / "state.json"
    held = LocalLease(state, Holder.current("test"))
    assert held.try_acquire()
    try:
        second = WatchProcess(
            ["manifests", "--state", str(state), *WATCH_FAST], directory, emulator.env()
        )
        assert second.process.wait(timeout=30) == 1
        second.wait_for_line(r"Error: another watch already runs")
    finally:
        held.release()
    assert [line for line in second.lines if line.strip()] == [
        f"Error: another watch already runs on this state: pid {os.getpid()} on "
        f"{Holder.current('test').host} (user {Holder.current('test').user}) holds "
        f"{held.description}; stop it first (a second watch on a local state would plan and "
        "apply twice)"
    ]
    assert emulator.requests() == []


def test_a_cycle_against_an_unreachable_url_reports_0_requests_sent(tmp_path: Path) -> None:
    directory = project(tmp_path)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {
        "RECONCILE_BASE_URL": url,
        "RECONCILE_DASHBOARDS_URL": url,
        "RECONCILE_ORGANIZATION_ID": "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c",
        "RECONCILE_KEY_ID": "id",
        "RECONCILE_KEY_SECRET": "secret",
        "RECONCILE_DASHBOARDS_TOKEN": "token",
    }
    args = ["manifests", "--state", "state.json", *WATCH_FAST]
    watch = WatchProcess(args, directory, env).start()
    try:
        line = watch.wait_for_line(r"cycle 1: failed; .*").string
        assert "; 0 requests; " in line and "cannot reach" in line
        assert watch.status()["cycles"][-1]["requests"] == 0
        found = _metrics(watch)
    finally:
        assert watch.terminate() == 0
    sent = {labels: v for (name, labels), v in found.items() if name.endswith("requests_total")}
    assert set(sent.values()) <= {0.0}
    assert found[("reconcile_requests", (("command", "watch"), ("interface", "management")))] == 0


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
