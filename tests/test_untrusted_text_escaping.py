"""Text from a server or a manifest cannot forge lines or hide what it says: control characters
are escaped in text logs and terminal output, bidirectional overrides are shown escaped in the
terminal and on the status page, and a server's message is cut at 1,000 characters there. JSON
output keeps the message whole (``json.dumps`` escapes control characters itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.model.apierrors import ApiError
from reconciler.model.errors import Location, ManifestError
from reconciler.model.text import MAX_SERVER_MESSAGE, shown
from reconciler.plan.render import table
from tests.support.cli import TILE, pipe_spec, run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.hostile_server import Handler, HostileServer, cli_env
from tests.support.watch import WatchProcess

FORGED = (
    "no such pipe\nreconcile_watch_leader 99\r\nX-Injected: 1\x1b[2J\x85 "
    "evil\u202eexe.txt\u2066x\u2069"
)
LONG = FORGED + "y" * 5000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text, é 漢字 ✓", "plain text, é 漢字 ✓"),
        ("a\nb\r\nc\td", "a\\nb\\r\\nc\\td"),
        ("\x1b[31mred\x00\x7f", "\\x1b[31mred\\x00\\x7f"),
        ("c1 \x85 \x9b", "c1 \\x85 \\x9b"),
        ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
        ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        (None, ""),
    ],
)
def test_shown_escapes_control_and_bidi_characters_and_nothing_else(
    text: str | None, expected: str
) -> None:
    assert shown(text) == expected


def test_shown_cuts_a_long_text_and_says_how_much_was_left_out() -> None:
    assert shown("x" * 1005, 1000) == "x" * 1000 + "… (5 more characters)"
    assert shown("x" * 1000, 1000) == "x" * 1000


def test_an_api_error_reads_as_one_line_with_the_message_cut_and_keeps_it_whole_in_json() -> None:
    error = ApiError(status=404, message=LONG, request_id="r-1\nX: 2", resource="pipe orders")
    text = str(error)
    assert "\n" not in text and "\r" not in text and "\u202e" not in text and "\x1b" not in text
    assert text.startswith("pipe orders: HTTP 404: no such pipe\\nreconcile_watch_leader 99\\r\\n")
    assert "evil\\u202eexe.txt" in text and "(requestId r-1\\nX: 2)" in text
    assert len(text) < MAX_SERVER_MESSAGE + 200
    assert error.to_dict()["message"] == LONG


def test_tables_of_the_read_only_commands_show_live_names_escaped() -> None:
    shown_table = table([["ev\u202eil\n", 1]], ["NAME", "N"])
    assert shown_table.splitlines()[1] == "ev\\u202eil\\n  1"


def test_a_manifest_error_shows_manifest_text_escaped() -> None:
    error = ManifestError(Location("m.yaml", 3, 5), "spec.name\u202e", "bad value 'a\nb\u202e'")
    assert str(error) == "m.yaml:3:5: spec.name\\u202e: bad value 'a\\nb\\u202e'"


def _forging(handler: Handler) -> None:
    """Answer every request 403 with a message that tries to forge log lines."""
    body = {"status": 403, "requestId": "req-1\nX-Injected: 2", "error": f"FORBIDDEN: {LONG}"}
    handler.answer(403, json.dumps(body).encode(), "application/json", X_Request_Id="req-1")


@pytest.fixture
def forging() -> Iterator[HostileServer]:
    server = HostileServer(_forging)
    yield server
    server.stop()


def _no_forged_line(text: str) -> None:
    for line in text.splitlines():
        assert not line.startswith(("reconcile_watch_leader", "X-Injected", " evil")), line
    assert "\u202e" not in text and "\x1b" not in text and "\x85" not in text


def test_plan_prints_a_forging_server_message_on_one_line(
    forging: HostileServer, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "p.yaml", "Pipe", "orders", pipe_spec())
    result = run_cli(
        ["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s.json")], cli_env(forging)
    )
    assert result.exit_code == 1, result.output
    _no_forged_line(result.output)
    assert "reconcile_watch_leader 99\\r\\nX-Injected: 1\\x1b[2J\\x85" in result.output
    assert "more characters)" in result.output


def test_watch_text_log_and_status_page_show_a_forging_server_message_escaped(
    forging: HostileServer, tmp_path: Path
) -> None:
    write_manifest(tmp_path / "m" / "p.yaml", "Pipe", "orders", pipe_spec())
    args = ["m", "--state", "s.json", "--interval", "1h", "--log-format", "text"]
    watch = WatchProcess(args, tmp_path, cli_env(forging)).start()
    try:
        watch.wait_for_line(r"cycle 1: ")
        page = watch.get("/").text
    finally:
        watch.terminate()
    _no_forged_line("\n".join(watch.lines))
    assert any("reconcile_watch_leader 99\\r\\n" in line for line in watch.lines), watch.lines
    _no_forged_line(page)
    assert "evil\\u202eexe.txt" in page
    assert "y" * MAX_SERVER_MESSAGE not in page


def test_plan_shows_a_manifest_value_with_bidi_and_c1_characters_escaped(
    emulator: Emulator, tmp_path: Path
) -> None:
    spec = {"name": "Ops\u202eevil\x85", "tiles": [TILE]}
    write_manifest(tmp_path / "m" / "d.yaml", "Dashboard", "ops", spec)
    result = run_cli(
        ["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s.json")], emulator.env()
    )
    assert result.exit_code == 0, result.output
    assert "Ops\\u202eevil\\x85" in result.stdout
    _no_forged_line(result.output)
