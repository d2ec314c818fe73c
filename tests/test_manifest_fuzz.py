"""Fuzz of the manifest loader: any bytes end in success or in file:line errors, never a traceback.

Three bounded hypothesis strategies feed ``load_resources`` (with positions, as ``plan`` loads,
and without, as ``validate`` does): arbitrary bytes; YAML-ish text built from the characters
that matter to the grammar (brackets, anchors, aliases, tags, quotes, indentation, merge
keys); valid manifests mutated by inserting, deleting or replacing a few characters; and a
valid manifest with such text spliced in as a value, so that schema validation walks it.
Every outcome must be a list of resources or a ``ManifestErrors`` whose every error names the
file and a line of it. ``FUZZ_EXAMPLES`` per source and mode: 4 x 2 x 150 = 1,200 in all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.load.manifests import load_resources
from reconciler.model.errors import ManifestErrors
from tests.support.manifests import DASHBOARD, KAFKA_PIPE, ORGANIZATION

FUZZ_EXAMPLES = 150
SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_TOKENS = [
    "\n", "  ", "- ", ": ", "[", "]", "{", "}", ",", "&a ", "*a", "&b ", "*b", "<<: ", "!!str ",
    "!!int ", "!!python/object ", "!custom ", "'", '"', "#", "---\n", "...\n", "? ", "|", ">",
    "apiVersion", "reconcile/v1", "kind", "Pipe", "Dashboard", "Organization", "metadata",
    "name", "spec", "settings", "tiles", "0x1F", "1e400", ".nan", "null", "~", "true", "\t",
    "\ufeff", "\x00", "\\u0000", "é", "9" * 30,
    # Hostile pieces: self-reference, deep nesting, fan-out of aliases.
    "&a [*a]", "&b {k: *b}", "[" * 150, "{x: " * 120, "&c [1, 2, 3]\n", "[*c, *c, *c, *c]",
]  # fmt: skip
yaml_like = st.lists(st.sampled_from(_TOKENS), max_size=60).map("".join)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid manifest with a few characters inserted, deleted or replaced."""
    text = bytearray(draw(st.sampled_from([KAFKA_PIPE, ORGANIZATION, DASHBOARD])).encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = draw(st.sampled_from([b"[", b"{", b"&x ", b"*x", b":", b"-", b"\n", b" ", b"\xff"]))
        if action == "insert":
            text[at:at] = chunk
        elif action == "delete":
            del text[at : at + len(chunk)]
        else:
            text[at : at + len(chunk)] = chunk
    return bytes(text)


@st.composite
def spliced(draw: st.DrawFn) -> bytes:
    """A valid pipe whose ``engine_max_threads`` value is YAML-ish text (so the schema walks it)."""
    value = draw(yaml_like).replace("\n", " ")
    return KAFKA_PIPE.replace("engine_max_threads: 4", f"engine_max_threads: {value}").encode(
        "utf-8", "surrogatepass"
    )


def check_outcome(path: Path, data: bytes, positions: bool) -> None:
    """Load ``data`` from ``path``: resources, or errors that all name the file and a line."""
    path.write_bytes(data)
    try:
        load_resources([path], default_organization=None, positions=positions)
    except ManifestErrors as exc:
        assert exc.errors
        for error in exc.errors:
            assert error.location.file == path.as_posix()
            assert error.location.line >= 1, str(error)
            assert str(error).startswith(f"{path.as_posix()}:{error.location.line}:")


SOURCES = {
    "bytes": st.binary(max_size=400),
    "yaml-like": yaml_like.map(lambda text: text.encode("utf-8", "surrogatepass")),
    "mutated": mutated(),
    "spliced": spliced(),
}


@pytest.mark.parametrize("positions", [False, True], ids=["validate", "plan"])
@pytest.mark.parametrize("source", list(SOURCES))
@SETTINGS
@given(data=st.data())
def test_any_input_should_load_or_give_file_line_errors(
    tmp_path: Path, positions: bool, source: str, data: st.DataObject
) -> None:
    check_outcome(tmp_path / "m.yaml", data.draw(SOURCES[source]), positions)
