"""`reconcile export` file handling and server capabilities: no overwrite without --force, spec-only servers."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Emulator
from tests.seed_ids import KAFKA_PIPE
from tests.test_inventory_get import invoke


def test_existing_files_are_never_overwritten_without_force(
    emulator: Emulator, tmp_path: Path
) -> None:
    assert invoke(emulator, "export", "--service", "analytics", "-o", str(tmp_path)).code == 0
    orders = tmp_path / "pipes" / "orders.yaml"
    orders.write_text("# hand edited\n")
    (tmp_path / "pipes" / "customers-cdc.yaml").unlink()
    again = invoke(emulator, "export", "--service", "analytics", "-o", str(tmp_path))
    assert again.code == 1
    assert str(orders) in again.error and "--force" in again.error
    assert orders.read_text() == "# hand edited\n"
    assert not (tmp_path / "pipes" / "customers-cdc.yaml").exists()  # nothing written at all


def test_force_overwrites_existing_files(emulator: Emulator, tmp_path: Path) -> None:
    assert invoke(emulator, "export", "--service", "analytics", "-o", str(tmp_path)).code == 0
    orders = tmp_path / "pipes" / "orders.yaml"
    orders.write_text("# hand edited\n")
    forced = invoke(emulator, "export", "--service", "analytics", "--force", "-o", str(tmp_path))
    assert forced.code == 0
    assert "kind: Pipe" in orders.read_text()


def test_spec_only_server_exports_pipes_named_by_id(emulator: Emulator, tmp_path: Path) -> None:
    emulator.configure(specOnly=True)
    whole = invoke(emulator, "export", "--service", "analytics", "-o", str(tmp_path))
    assert whole.code == 1 and "--pipe ID" in whole.error
    one = invoke(
        emulator, "export", "--service", "analytics", "--pipe", KAFKA_PIPE, "-o", str(tmp_path)
    )
    assert one.code == 0, one.error
    assert [p.name for p in tmp_path.rglob("*.yaml")] == ["orders.yaml"]
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error


def test_spec_only_server_cannot_export_the_organization(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(specOnly=True)
    out = invoke(emulator, "export", "--organization-manifest", "-o", str(tmp_path))
    assert out.code == 1 and "cannot read an organization" in out.error
    assert not list(tmp_path.iterdir())


def test_export_needs_something_to_export(emulator: Emulator, tmp_path: Path) -> None:
    out = invoke(emulator, "export", "-o", str(tmp_path))
    assert out.code == 1 and "nothing to export" in out.error
