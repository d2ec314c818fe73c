"""Manifest limits: alias expansion, nesting depth and file size end in a clean file:line error.

Covers an alias bomb (never expanded without bound), deep flow nesting (never a
``RecursionError`` traceback), recursive aliases, the file-size bound, that each limit can
be changed through its environment variable, and that ordinary aliases and merge keys still
load. The time of ``validate`` on the bomb is a benchmark row (``bench/limits_bench.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.hostile_manifests import alias_bomb, deep_nesting
from reconciler.load.manifests import ManifestLimits, load_resources
from reconciler.model.errors import ManifestErrors
from tests.support.cli import run_cli
from tests.support.manifests import KAFKA_PIPE, error_lines, replace_line, write


def test_alias_bomb_should_stop_at_the_alias_that_crosses_the_bound(tmp_path: Path) -> None:
    path = write(tmp_path, "bomb.yaml", alias_bomb(8, 10))
    lines = error_lines([path])
    assert len(lines) == 1
    assert lines[0].startswith(f"{path.as_posix()}:")
    assert "aliases expand to more than 10000 nodes" in lines[0]
    assert "RECONCILE_MANIFEST_MAX_ALIAS_NODES" in lines[0]


def test_alias_bomb_through_validate_should_exit_1_with_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bomb.yaml", alias_bomb(8, 10))
    result = run_cli(["validate", str(path)], {})
    assert result.exit_code == 1
    assert "aliases expand to more than 10000 nodes" in result.output
    assert "Traceback" not in result.output


def test_deep_flow_nesting_should_be_a_depth_error_not_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "deep.yaml", deep_nesting(100_000))
    result = run_cli(["validate", str(path)], {})
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "RecursionError" not in result.output
    # The first collection deeper than 100 levels is on line 12 (the document, spec and
    # settings are levels 1 to 3; the 98th bracket opens level 101).
    assert f"{path.as_posix()}:12:" in result.output
    assert "nested deeper than 100 levels" in result.output


def test_deep_nesting_should_also_be_caught_when_positions_are_recorded(tmp_path: Path) -> None:
    path = write(tmp_path, "deep.yaml", deep_nesting(5_000))
    with pytest.raises(ManifestErrors) as caught:
        load_resources([path], positions=True)
    assert "nested deeper than 100 levels" in str(caught.value)


def test_recursive_alias_should_be_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = replace_line(KAFKA_PIPE, "  settings:", "  x: &a [1, *a]\n  settings:")
    write(tmp_path, "m.yaml", text)
    lines = error_lines(["m.yaml"])
    assert lines == ["m.yaml:16:13: alias *a refers to the collection that holds it"]


def test_ordinary_aliases_and_merge_keys_should_still_load(tmp_path: Path) -> None:
    text = replace_line(
        KAFKA_PIPE,
        "  settings:\n    streaming_max_insert_wait_ms: 5000\n    engine_max_threads: 4\n",
        "  settings: &s\n    streaming_max_insert_wait_ms: 5000\n    engine_max_threads: 4\n"
        "  destination:\n    columns:\n      - &c {name: id, type: UInt64}\n      - *c\n",
    )
    [resource] = load_resources([write(tmp_path, "m.yaml", text)])
    assert resource.spec["destination"]["columns"] == [{"name": "id", "type": "UInt64"}] * 2


def test_file_larger_than_the_bound_should_be_refused_before_parsing(tmp_path: Path) -> None:
    path = write(tmp_path, "big.yaml", KAFKA_PIPE + "# " + "x" * 2000 + "\n")
    with pytest.raises(ManifestErrors) as caught:
        load_resources([path], limits=ManifestLimits(max_bytes=1024))
    [error] = caught.value.errors
    assert error.location.file == path.as_posix()
    assert error.message.startswith("file is 2.5 KiB, more than the limit of 1.0 KiB")
    assert "RECONCILE_MANIFEST_MAX_BYTES" in error.message


@pytest.mark.parametrize(
    ("variable", "value", "text", "expected"),
    [
        ("RECONCILE_MANIFEST_MAX_ALIAS_NODES", "5", alias_bomb(2, 3), "more than 5 nodes"),
        ("RECONCILE_MANIFEST_MAX_DEPTH", "4", deep_nesting(3), "deeper than 4 levels"),
        ("RECONCILE_MANIFEST_MAX_BYTES", "100", KAFKA_PIPE, "more than the limit of 100 B"),
    ],
)
def test_each_limit_should_be_set_by_its_environment_variable(
    tmp_path: Path, variable: str, value: str, text: str, expected: str
) -> None:
    path = write(tmp_path, "m.yaml", text)
    result = run_cli(["validate", str(path)], {variable: value})
    assert result.exit_code == 1
    assert expected in result.output


def test_an_invalid_limit_variable_should_be_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yaml", KAFKA_PIPE)
    result = run_cli(["validate", str(path)], {"RECONCILE_MANIFEST_MAX_DEPTH": "deep"})
    assert result.exit_code != 0
    assert "RECONCILE_MANIFEST_MAX_DEPTH" in result.output
    assert "Traceback" not in result.output
