"""`reconcile fmt` (canonical style, comments and modeline kept, --check) and `reconcile explain`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

REPO = Path(__file__).resolve().parent.parent
MESSY = """\
# yaml-language-server: $schema=../schemas/organization.schema.json
# The organization.
apiVersion: reconcile/v1
kind: Organization
metadata:
     name: acme   # keep me
spec:
  privateEndpoints:
  - id: e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51
    description: "quoted stays quoted"
"""
CANONICAL = """\
# yaml-language-server: $schema=../schemas/organization.schema.json
# The organization.
apiVersion: reconcile/v1
kind: Organization
metadata:
  name: acme      # keep me
spec:
  privateEndpoints:
    - id: e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51
      description: "quoted stays quoted"
"""


def test_fmt_check_fails_on_a_file_that_would_change_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(MESSY, encoding="utf-8")
    result = run_cli(["fmt", "--check", "--diff", str(tmp_path)], {})
    assert result.exit_code == 1
    assert f"would reformat {path}" in result.stdout
    assert "-     name: acme   # keep me" in result.stdout
    assert path.read_text(encoding="utf-8") == MESSY


def test_fmt_rewrites_canonically_keeping_comments_and_the_modeline_and_is_idempotent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(MESSY, encoding="utf-8")
    assert run_cli(["fmt", str(path)], {}).exit_code == 0
    assert path.read_text(encoding="utf-8") == CANONICAL
    again = run_cli(["fmt", "--check", str(path)], {})
    assert (
        again.exit_code == 0 and "0 files would be reformatted, 1 already formatted" in again.stdout
    )


def test_fmt_leaves_example_manifests_alone_and_skips_yaml_that_is_not_a_manifest(
    tmp_path: Path,
) -> None:
    shutil.copytree(REPO / "manifests", tmp_path / "m")
    (tmp_path / "m" / "ci.yaml").write_text("on: push\njobs: {}\n", encoding="utf-8")
    result = run_cli(["fmt", "--check", str(tmp_path / "m")], {})
    assert result.exit_code == 0, result.output
    assert "6 already formatted, 1 skipped (not reconcile manifests)" in result.stdout


def test_fmt_reports_a_broken_file_at_its_line_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: reconcile/v1\nkind: [\n", encoding="utf-8")
    result = run_cli(["fmt", "--check", str(tmp_path)], {})
    assert result.exit_code == 1
    assert f"{tmp_path / 'bad.yaml'}:3:1:" in result.stderr


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "Pipe.spec.settings.engine_max_threads",
            [
                "TYPE:     integer",
                "BOUNDS:   ≥ 0, ≤ 64",
                "ACCESS:   writable: changed by the pipe update",
            ],
        ),
        ("pipe.settings.engine_max_threads", ["FIELD:    spec.settings.engine_max_threads"]),
        (
            "Pipe.spec.state",
            ["ACCESS:   read-only: an expectation", "VALUES:   Unknown, Provisioning"],
        ),
        (
            "Pipe.spec.source.kafka.credentials",
            [
                "ACCESS:   sensitive, writable: write-only secret",
                "TYPE:     Credentials or Access key or Connection string or Mutual TLS",
                "privateKey",
            ],
        ),
        ("Pipe.spec.pipeId", ["ACCESS:   identity: says which pipe"]),
        ("Dashboard.spec.tiles.series.type", ["VALUES:   time, table, number, search, markdown"]),
        ("Organization", ["spec (required)", "KIND:     Organization"]),
    ],
)
def test_explain_describes_type_bounds_values_and_access_from_the_schemas(
    target: str, expected: list[str]
) -> None:
    result = run_cli(["explain", target], {})
    assert result.exit_code == 0, result.output
    for line in expected:
        assert line in result.stdout


def test_explain_names_the_unknown_field_with_a_suggestion() -> None:
    result = run_cli(["explain", "Pipe.spec.setings"], {})
    assert result.exit_code == 1
    assert "Pipe.spec has no field 'setings' (did you mean 'settings'?)" in result.stderr


def test_explain_json_carries_the_same_facts() -> None:
    result = run_cli(
        ["explain", "Pipe.spec.settings.streaming_max_insert_wait_ms", "-o", "json"], {}
    )
    body = result.json()
    assert body["type"] == "integer or null" and body["bounds"] == ["≥ 500", "≤ 60000"]
