"""The small cuts a new user hit: lowercase kinds in `state show`, `export` wording and service
names, "did you mean" for services and targets, enum values in `explain` field lists, tiles past
the 24-column grid, the 401 message, `make demo`'s temporary directory and progress in CI logs."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from reconciler.cli import terminal
from reconciler.cli.demo import main as demo_main
from reconciler.state.backend import locked_state
from reconciler.state.stores import open_backend
from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.inventory import invoke
from tests.support.manifests import DASHBOARD, EXAMPLES, KAFKA_PIPE, REPO, replace_line, write


def test_state_show_accepts_the_lowercase_kind_that_target_and_explain_accept(
    tmp_path: Path,
) -> None:
    state = str(tmp_path / "state.json")
    with locked_state(open_backend(state, "default")) as document:
        document.record("Pipe/orders", secrets={"source.kafka.credentials": "hmac-sha256:ab"})
        document.save()
    upper = run_cli(["state", "show", "Pipe/orders", "--state", state, "-o", "json"], {})
    lower = run_cli(["state", "show", "pipe/orders", "--state", state, "-o", "json"], {})
    assert upper.exit_code == 0, upper.output
    assert lower.exit_code == 0, lower.output
    assert lower.json() == upper.json()
    assert run_cli(["state", "show", "pipe/orders", "--state", state], {}).stdout.startswith(
        "Pipe/orders\n"
    )


def test_export_without_dir_names_only_what_was_typed(tmp_path: Path) -> None:
    result = run_cli(["export", "--service", "analytics"], {})
    assert result.exit_code == 1
    assert "export needs --dir DIR" in result.stderr
    assert "-o text" not in result.stderr and "output format" not in result.stderr
    typed = run_cli(["export", "--service", "analytics", "-o", "json"], {})
    assert "-o json is the output format" in typed.stderr  # the hint stays when -o was given


def test_export_by_service_name_writes_the_service_name(emulator: Emulator, tmp_path: Path) -> None:
    done = invoke(emulator, "export", "--service", "analytics", "--dir", str(tmp_path))
    assert done.code == 0, done.error
    orders = (tmp_path / "pipes" / "orders.yaml").read_text()
    assert "  service: analytics\n" in orders and "serviceId:" not in orders
    plan = invoke(emulator, "plan", str(tmp_path), "--detailed-exitcode")
    assert plan.code == 0, plan.output + plan.error


def test_unknown_service_name_suggests_the_closest_one(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project directory, which secret files must stay inside
    exported = invoke(emulator, "export", "--service", "analytic", "--dir", str(tmp_path))
    assert exported.code == 1
    assert "service 'analytic' not found" in exported.error
    assert "(did you mean 'analytics'?)" in exported.error
    manifest = replace_line(
        KAFKA_PIPE, "  serviceId: 3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71", "  service: analytic"
    )
    write(tmp_path / "m", "orders.yaml", manifest)
    write(tmp_path / "m", "secrets/kafka-password", "pw")  # every secret resolves: the plan reads
    planned = run_cli(["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s")], emulator.env())
    assert "service 'analytic' not found" in planned.output
    assert "did you mean 'analytics'?" in planned.output


def test_target_matching_nothing_suggests_the_closest_resource(
    emulator: Emulator, tmp_path: Path
) -> None:
    write(tmp_path, "orders.yaml", KAFKA_PIPE)
    write(tmp_path, "overview.yaml", DASHBOARD)
    result = run_cli(["plan", str(tmp_path), "--target", "pipe/order"], emulator.env())
    assert result.exit_code == 1
    assert "--target pipe/order matches no resource" in result.stderr
    assert "(did you mean 'Pipe/orders'?)" in result.stderr


def test_explain_field_lists_show_the_values_of_an_enum_field() -> None:
    result = run_cli(["explain", "pipe.spec.source.kafka"], {})
    assert result.exit_code == 0, result.output
    assert "values below" not in result.stdout
    fields = result.stdout.partition("FIELDS:")[2].splitlines()
    line = next(x for x in fields if x.strip().startswith("authentication"))
    assert "<one of PLAIN," in line, line
    field = run_cli(["explain", "pipe.spec.source.kafka.authentication"], {}).stdout
    assert "VALUES:   PLAIN," in field


def test_a_tile_past_the_24_column_grid_is_a_validation_error_with_its_line(
    tmp_path: Path,
) -> None:
    wide = DASHBOARD.replace("{name: events, x: 0,", "{name: events, x: 20,")
    path = write(tmp_path, "overview.yaml", wide)
    result = run_cli(["validate", str(path)], {})
    assert result.exit_code == 1, result.output
    assert re.search(
        rf"{re.escape(str(path))}:8:7: spec\.tiles\[0\]: .*x \+ w = 20 \+ 12 = 32.*24 columns",
        result.stdout,
    ), result.stdout
    edge = write(tmp_path / "ok", "overview.yaml", wide.replace("w: 12", "w: 4"))
    assert run_cli(["validate", str(edge)], {}).exit_code == 0


def test_a_refused_dashboards_token_is_named_once(emulator: Emulator, tmp_path: Path) -> None:
    write(tmp_path, "overview.yaml", DASHBOARD)
    env = {**emulator.env(), "RECONCILE_DASHBOARDS_TOKEN": "wrong-token"}
    result = run_cli(["plan", str(tmp_path), "--state", str(tmp_path / "s.json")], env)
    assert result.exit_code == 1
    assert "HTTP 401" in result.stderr
    assert result.stderr.count("RECONCILE_DASHBOARDS_TOKEN") == 1, result.stderr


def test_make_demo_leaves_no_temporary_directory_and_ends_saying_where_the_docs_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"  # the repository's project file and example manifests
    shutil.copytree(EXAMPLES, project / "manifests")
    shutil.copy(REPO / "reconcile.yaml", project)
    # Unpaced: what is checked is where the demo leaves files and how it ends, not its pacing.
    unpaced = (
        (project / "reconcile.yaml")
        .read_text(encoding="utf-8")
        .replace("management: 10/10", "management: none")
    )
    assert "management: none" in unpaced
    (project / "reconcile.yaml").write_text(unpaced, encoding="utf-8")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    monkeypatch.chdir(project)
    monkeypatch.delenv("RECONCILE_CONFIG")
    assert demo_main([]) == 0, capsys.readouterr()
    assert list(scratch.iterdir()) == []
    last = capsys.readouterr().out.splitlines()[-2:]
    assert last == [
        "Documentation: docs/index.md (mkdocs serve)",
        "Start a project of your own: reconcile init DIR",
    ]


def test_a_long_run_logs_progress_lines_when_stderr_is_not_a_terminal(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(terminal.Progress, "LOG_INTERVAL", 0.5, raising=False)
    monkeypatch.chdir(tmp_path)  # the project directory, which secret files must stay inside
    write(tmp_path, "overview.yaml", DASHBOARD)
    write(
        tmp_path, "orders.yaml", KAFKA_PIPE.replace("secrets/kafka-password", str(tmp_path / "pw"))
    )
    (tmp_path / "pw").write_text("x")
    result = run_cli(
        ["apply", str(tmp_path), "--auto-approve", "--rate", "1/1", "--state", str(tmp_path / "s")],
        emulator.env(),
    )
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.startswith("reconcile: ")]
    assert lines, result.stderr
    assert re.match(r"reconcile: (reading live state|applying): \d+", lines[0]), lines
