"""Identity is the live object's id: renames never delete, saved plans are single-use, and two
manifests never address one live object (against the emulator, with and without extensions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import TILE, pipe_spec, run_cli, write_manifest, writes
from tests.support.emulator import Emulator
from tests.support.seed_ids import KAFKA_PIPE, ORG_ID


def _dashboard(path: Path, slug: str, title: str = "Ops") -> Path:
    return write_manifest(
        path, "Dashboard", slug, {"name": title, "tiles": [TILE], "tags": ["ops"]}
    )


def _stored_dashboards(emulator: Emulator) -> list[dict[str, Any]]:
    return list(emulator.data()["dashboards"].values())


def _apply(paths: list[Path | str], state: Path, env: dict[str, str], *extra: str) -> Any:
    return run_cli(
        ["apply", *map(str, paths), "--auto-approve", "--state", str(state), *extra], env
    )


@pytest.mark.parametrize("spec_only", [False, True], ids=["extensions", "spec-only"])
def test_renaming_metadata_name_with_prune_is_a_rename_never_a_delete(
    emulator: Emulator, tmp_path: Path, spec_only: bool
) -> None:
    emulator.configure(specOnly=spec_only)
    root, state = tmp_path / "m", tmp_path / "state.json"
    _dashboard(root / "d.yaml", "ops")
    assert _apply([root], state, emulator.env(), "--new-state").exit_code == 0
    created = _stored_dashboards(emulator)
    assert len(created) == 1
    _dashboard(root / "d.yaml", "operations")  # metadata.name renamed; same dashboard
    plan = run_cli(["plan", str(root), "--prune", "--state", str(state)], emulator.env())
    assert plan.exit_code == 0, plan.output
    assert "renamed from Dashboard/ops" in plan.stdout
    assert "DELETE" not in plan.stdout and "POST" not in plan.stdout
    applied = _apply([root], state, emulator.env(), "--prune")
    assert applied.exit_code == 0, applied.output
    assert [w["method"] for w in writes(emulator.requests())] == ["POST"]
    assert [d["id"] for d in _stored_dashboards(emulator)] == [created[0]["id"]]
    recorded = json.loads(state.read_text())["resources"]
    assert "Dashboard/ops" not in recorded
    assert recorded["Dashboard/operations"]["id"] == created[0]["id"]
    assert recorded["Dashboard/operations"]["createdByUs"] is True
    again = run_cli(
        ["plan", str(root), "--prune", "--detailed-exitcode", "--state", str(state)], emulator.env()
    )
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("spec_only", [False, True], ids=["extensions", "spec-only"])
def test_saved_plan_with_a_create_applies_once_and_then_says_it_was_applied(
    emulator: Emulator, tmp_path: Path, spec_only: bool
) -> None:
    emulator.configure(specOnly=spec_only)
    root, state, saved = tmp_path / "m", tmp_path / "state.json", tmp_path / "d.plan"
    _dashboard(root / "d.yaml", "pipes-overview", "Pipes overview")
    made = run_cli(
        [
            "plan",
            str(root),
            "--target",
            "dashboard/pipes-overview",
            "--state",
            str(state),
            "--out",
            str(saved),
            "--new-state",
        ],
        emulator.env(),
    )
    assert made.exit_code == 0, made.output
    action = json.loads(saved.read_text())["actions"][0]
    assert action["operation"] == "create" and action["basis"] is not None
    first = run_cli(
        ["apply", "--plan", str(saved), "--auto-approve", "--state", str(state), "--new-state"],
        emulator.env(),
    )
    assert first.exit_code == 0, first.output
    second = run_cli(
        ["apply", "--plan", str(saved), "--auto-approve", "--state", str(state)], emulator.env()
    )
    assert "already applied" in second.output
    assert second.exit_code == 0, second.output
    partial = run_cli(
        ["apply", "--plan", str(saved), "--auto-approve", "--partial", "--state", str(state)],
        emulator.env(),
    )
    assert "already applied" in partial.output
    assert [w["method"] for w in writes(emulator.requests())] == ["POST"]
    assert len(_stored_dashboards(emulator)) == 1


def test_saved_plan_of_updates_applied_twice_sends_nothing_the_second_time(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state, saved = tmp_path / "m", tmp_path / "state.json", tmp_path / "p.plan"
    write_manifest(root / "o.yaml", "Pipe", "orders", pipe_spec(settings={"engine_max_threads": 9}))
    assert (
        run_cli(
            ["plan", str(root), "--state", str(state), "--out", str(saved)], emulator.env()
        ).exit_code
        == 0
    )
    args = ["apply", "--plan", str(saved), "--auto-approve", "--state", str(state)]
    assert run_cli(args, emulator.env()).exit_code == 0
    second = run_cli(args, emulator.env())
    assert second.exit_code == 0, second.output
    assert "already applied" in second.output
    assert len(writes(emulator.requests())) == 1


def test_two_pipe_manifests_with_one_pipe_id_are_an_error_naming_both_before_any_request(
    emulator: Emulator, tmp_path: Path
) -> None:
    root = tmp_path / "m"
    write_manifest(root / "a.yaml", "Pipe", "a", pipe_spec(settings={"engine_max_threads": 8}))
    write_manifest(root / "b.yaml", "Pipe", "b", pipe_spec(settings={"engine_max_threads": 4}))
    result = _apply([root], tmp_path / "s.json", emulator.env())
    assert result.exit_code == 1
    assert f"pipe {KAFKA_PIPE}" in result.stderr
    assert "a.yaml:" in result.stderr and "b.yaml:" in result.stderr
    assert emulator.requests() == []


def test_two_organization_manifests_with_one_id_are_an_error(tmp_path: Path) -> None:
    root = tmp_path / "m"
    for name in ("one", "two"):
        write_manifest(
            root / f"{name}.yaml", "Organization", name, {"organizationId": ORG_ID, "name": name}
        )
    result = run_cli(["validate", str(root)], {})
    assert result.exit_code == 1
    assert f"organization {ORG_ID}" in result.output and "one.yaml:" in result.output


def test_two_dashboard_manifests_with_one_name_are_an_error_before_any_request(
    emulator: Emulator, tmp_path: Path
) -> None:
    root = tmp_path / "m"
    _dashboard(root / "a.yaml", "first", "Same")
    _dashboard(root / "b.yaml", "second", "Same")
    result = run_cli(["plan", str(root), "--state", str(tmp_path / "s.json")], emulator.env())
    assert result.exit_code == 1
    assert "dashboard named 'Same'" in result.stderr
    assert "a.yaml:" in result.stderr and "b.yaml:" in result.stderr
    assert emulator.requests() == []


def test_a_live_dashboard_state_binds_to_another_manifest_is_never_adopted_by_name(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "state.json"
    _dashboard(root / "a.yaml", "first", "Alpha")
    assert _apply([root], state, emulator.env()).exit_code == 0
    # The live dashboard gets renamed on the server; a second manifest adopts it by that name.
    (live,) = _stored_dashboards(emulator)
    emulator_put = {"name": "Beta", "tiles": [TILE], "tags": ["ops"]}
    import httpx

    httpx.put(
        f"{emulator.url}/api/v2/dashboards/{live['id']}",
        json=emulator_put,
        headers={"Authorization": f"Bearer {emulator.token}"},
    ).raise_for_status()
    _dashboard(root / "b.yaml", "second", "Beta")
    before = len(writes(emulator.requests()))
    result = run_cli(["plan", str(root), "--state", str(state)], emulator.env())
    assert result.exit_code == 0, result.output
    assert "+ dashboard second" in result.stdout  # a new dashboard: never a second owner
    assert live["id"] in result.stdout and "Dashboard/first" in result.stdout
    assert len(writes(emulator.requests())) == before


def test_a_pending_rename_is_one_change_to_the_summaries_the_exit_code_and_apply(
    emulator: Emulator, tmp_path: Path
) -> None:
    root, state = tmp_path / "m", tmp_path / "state.json"
    _dashboard(root / "d.yaml", "ops")
    assert _apply([root], state, emulator.env(), "--new-state").exit_code == 0
    _dashboard(root / "d.yaml", "operations")
    plan = [str(root), "--detailed-exitcode", "--state", str(state)]
    line = (
        "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 to rename, 0 unchanged "
        "(0 with warnings), 0 with errors."
    )
    text = run_cli(["plan", *plan], emulator.env())
    assert (text.exit_code, text.stdout.splitlines()[-2]) == (2, line)
    document = run_cli(["plan", *plan, "-o", "json"], emulator.env())
    assert document.exit_code == 2 and document.json()["exitCode"] == 2
    summary = document.json()["summary"]
    assert (summary["rename"], summary["unchanged"]) == (1, 0)
    markdown = run_cli(["plan", *plan, "-o", "markdown"], emulator.env())
    assert markdown.exit_code == 2 and f"**{line}**" in markdown.stdout
    applied = _apply([root], state, emulator.env())
    assert applied.exit_code == 0, applied.output
    assert "Dashboard/operations: applied\n    renamed from Dashboard/ops:" in applied.stdout
    assert "Apply complete: 1 applied, 0 failed." in applied.stdout
    assert [w["method"] for w in writes(emulator.requests())] == ["POST"]  # the first create
    assert run_cli(["plan", *plan], emulator.env()).exit_code == 0
