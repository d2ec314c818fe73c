"""One base endpoint manifest, and a pipe naming it, applied to two environments: each
organization gets its own endpoint (a different id), each pipe names its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reconciler.emulator import OTHER_ORG_ID
from tests.support.cli import run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.pipes import MSK, kafka_pipe

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "environments"


def test_one_base_endpoint_gives_each_environment_its_own_endpoint_and_pipe(
    tmp_path: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "environments"
    shutil.copytree(EXAMPLE, project)
    shutil.copy(project / ".env.example", project / ".env")
    monkeypatch.chdir(project)
    base = project / "base"
    endpoint = {k: v for k, v in MSK.items() if k != "organizationId"}
    write_manifest(
        base / "endpoints" / "msk.yaml", "ReversePrivateEndpoint", "msk-orders", endpoint
    )
    pipe = {k: v for k, v in kafka_pipe(["msk-orders"]).items() if k != "organizationId"}
    write_manifest(
        base / "pipes" / "private.yaml", "Pipe", "orders-private", {**pipe, "service": "analytics"}
    )
    env = {
        "RECONCILE_CONFIG": str(project / "reconcile.yaml"),
        "RECONCILE_BASE_URL": emulator.url,
        "RECONCILE_DASHBOARDS_URL": emulator.url,
    }
    ids = {}
    for name in ("staging", "production"):
        applied = run_cli(["apply", "--env", name, "--auto-approve"], env)
        assert applied.exit_code == 0, applied.output
        shown = run_cli(
            ["state", "show", "ReversePrivateEndpoint/msk-orders", "--env", name, "-o", "json"], env
        )
        assert shown.exit_code == 0, shown.output
        ids[name] = shown.json()["id"]
        planned = run_cli(["plan", "--env", name, "--detailed-exitcode"], env)
        assert planned.exit_code == 0, planned.output
    assert ids["staging"] != ids["production"]
    data = emulator.data()
    pipes = {p["serviceId"]: p for p in data["pipes"].values() if p["name"] == "orders-private"}
    endpoints = data["reversePrivateEndpoints"]
    for name, ident in ids.items():
        service = endpoints[ident]["serviceId"]
        assert pipes[service]["source"]["kafka"]["reversePrivateEndpointIds"] == [ident], name
    organizations = {
        data["services"][endpoints[i]["serviceId"]]["organizationId"] for i in ids.values()
    }
    assert organizations == {OTHER_ORG_ID, emulator.org_id}
