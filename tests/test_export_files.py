"""`reconcile export` file handling and server capabilities: no overwrite without --force, spec-only servers."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.inventory import invoke
from tests.support.seed_ids import KAFKA_PIPE


def test_existing_files_are_never_overwritten_without_force(
    emulator: Emulator, tmp_path: Path
) -> None:
    assert invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path)).code == 0
    orders = tmp_path / "pipes" / "orders.yaml"
    orders.write_text("# hand edited\n")
    (tmp_path / "pipes" / "customers-cdc.yaml").unlink()
    again = invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path))
    assert again.code == 1
    assert str(orders) in again.error and "--force" in again.error
    assert orders.read_text() == "# hand edited\n"
    assert not (tmp_path / "pipes" / "customers-cdc.yaml").exists()  # nothing written at all


def test_force_overwrites_existing_files(emulator: Emulator, tmp_path: Path) -> None:
    assert invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path)).code == 0
    orders = tmp_path / "pipes" / "orders.yaml"
    orders.write_text("# hand edited\n")
    forced = invoke(emulator, "export", "--service", "analytics", "--force", "--dir", str(tmp_path))
    assert forced.code == 0
    assert "kind: Pipe" in orders.read_text()


def test_spec_only_server_exports_pipes_named_by_id(emulator: Emulator, tmp_path: Path) -> None:
    emulator.configure(specOnly=True)
    whole = invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path))
    assert whole.code == 1 and "--pipe ID" in whole.error
    one = invoke(
        emulator, "export", "--service", "analytics", "--pipe", KAFKA_PIPE, "--dir", str(tmp_path)
    )
    assert one.code == 0, one.error
    assert [p.name for p in tmp_path.rglob("*.yaml")] == ["orders.yaml"]
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error


def test_spec_only_server_cannot_export_the_organization(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    out = invoke(emulator, "export", "--organization-manifest", "--dir", str(tmp_path))
    assert out.code == 1 and "cannot read an organization" in out.error
    assert not list(tmp_path.iterdir())


def test_export_needs_something_to_export(emulator: Emulator, tmp_path: Path) -> None:
    out = invoke(emulator, "export", "--dir", str(tmp_path))
    assert out.code == 1 and "nothing to export" in out.error


def test_export_dir_and_output_format_are_separate_flags(
    emulator: Emulator, tmp_path: Path
) -> None:
    out = run_cli(["export", "--org", "--dir", str(tmp_path / "m"), "-o", "json"], emulator.env())
    assert out.exit_code == 0, out.output
    assert out.json()["written"] == [str(tmp_path / "m" / "organization.yaml")]


def test_old_export_o_dir_still_works_with_a_deprecation_line_and_o_json_is_a_format(
    emulator: Emulator, tmp_path: Path
) -> None:
    old = run_cli(["export", "--org", "-o", str(tmp_path / "m")], emulator.env())
    assert old.exit_code == 0 and (tmp_path / "m" / "organization.yaml").is_file()
    assert "`export -o DIR` is deprecated" in old.stderr
    assert f"use --dir {tmp_path / 'm'}" in old.stderr
    ambiguous = run_cli(["export", "--org", "-o", "json"], emulator.env())
    assert ambiguous.exit_code == 1
    assert "export needs --dir DIR (-o json is the output format" in ambiguous.stderr
    assert not Path("json").exists()
