"""`export --by-name`: pipe manifests bound by name (no pipeId, no organizationId, the service
by name, create-time fields included) that adopt their pipes where they exist and create them
where they do not, e.g. in another organization or after the pipe was deleted."""

from __future__ import annotations

from pathlib import Path

import httpx
from ruamel.yaml import YAML

from tests.support.cli import UNPACED, run_cli, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import ANALYTICS, OBJECT_STORAGE_PIPE, ORG_ID


def test_export_by_name_writes_manifests_that_adopt_and_recreate_their_pipes(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = tmp_path / "exported"
    exported = run_cli(
        ["export", "--service", "analytics", "--by-name", "--dir", str(out)], emulator.env()
    )
    assert exported.exit_code == 0, exported.output
    path = out / "pipes" / "events-archive.yaml"
    spec = YAML(typ="safe").load(path.read_text())["spec"]
    assert "pipeId" not in spec and "organizationId" not in spec and "serviceId" not in spec
    assert spec["service"] == "analytics" and spec["name"] == "events-archive"
    assert spec["source"]["objectStorage"]["url"]  # a create-time field, so it can create
    assert spec["destination"]["table"] == "events"
    state = tmp_path / "s.json"
    target = str(path)
    adopted = run_cli(
        ["plan", target, "--state", str(state), "--detailed-exitcode", *UNPACED], emulator.env()
    )
    assert adopted.exit_code == 0, adopted.output  # bound by name to the live pipe: no changes
    with httpx.Client(base_url=emulator.url, auth=(emulator.key_id, emulator.key_secret)) as c:
        c.delete(
            f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{OBJECT_STORAGE_PIPE}"
        ).raise_for_status()
    before = len(writes(emulator.requests()))
    created = run_cli(
        ["apply", target, "--auto-approve", "--state", str(state), *UNPACED], emulator.env()
    )
    assert created.exit_code == 0, created.output
    assert "+ pipe events-archive (create)" in created.stdout
    posts = [w for w in writes(emulator.requests())[before:] if w["method"] == "POST"]
    assert len(posts) == 1
    again = run_cli(
        ["plan", target, "--state", str(state), "--detailed-exitcode", *UNPACED], emulator.env()
    )
    assert again.exit_code == 0, again.output
