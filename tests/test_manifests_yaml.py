"""The fast YAML layer (``reconciler.load.yamlsource``): same data as ruamel's safe loader, JSON types.

Checks the event-based builder against ``YAML(typ="safe", pure=False)`` on the example
manifests and on scalar edge cases, that it really runs on the C parser, that timestamps
stay strings and keys are always strings, and the position index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from reconciler.load import yamlsource
from reconciler.load.yamlsource import YamlSyntaxError, parse, position_index, resolve_plain
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


def test_yamlsource_should_use_the_c_parser() -> None:
    assert yamlsource.CParser is not None
    assert YAML(typ="safe", pure=False).Parser.__name__ == "CParser"


@pytest.mark.parametrize("path", sorted((EXAMPLES).rglob("*.yaml")), ids=lambda p: p.name)
def test_parse_should_equal_ruamel_safe_loader_on_example_manifests(path: Path) -> None:
    data = path.read_bytes()
    assert parse(data) == list(YAML(typ="safe", pure=False).load_all(data))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("~", None),
        ("null", None),
        ("", None),
        ("true", True),
        ("False", False),
        ("yes", "yes"),
        ("on", "on"),
        ("12", 12),
        ("-3", -3),
        ("0x1F", 31),
        ("0o17", 15),
        ("1.5", 1.5),
        ("5000.0", 5000.0),
        ("1e3", 1000.0),
        ("-.inf", float("-inf")),
        ("1_000", "1_000"),
        ("2024-01-01", "2024-01-01"),
        ("0b5e7d1c-2a3f", "0b5e7d1c-2a3f"),
    ],
)
def test_resolve_plain_should_follow_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert resolve_plain(text) == value
    assert type(resolve_plain(text)) is type(value)


def test_parse_should_keep_quoted_scalars_as_strings_and_keys_as_text() -> None:
    [doc] = parse(b'a: "12"\n1: x\ntrue: y\nb: !!str 3\nc: !!float 2\n')
    assert doc == {"a": "12", "1": "x", "true": "y", "b": "3", "c": 2.0}


def test_parse_should_reject_unsupported_tags_with_position() -> None:
    with pytest.raises(YamlSyntaxError) as info:
        parse(b"a: 1\nb: !python/object x\n")
    assert (info.value.line, info.value.col) == (2, 4)


def test_position_index_should_keep_first_occurrence_of_duplicate_key() -> None:
    [index] = position_index(b"a: 1\nb:\n  - x\n  - {c: 1}\na: 2\n")
    assert index[("a",)] == (1, 1)
    assert index[("b", 1)] == (4, 5)
    assert index[("b", 1, "c")] == (4, 6)
