"""Formatting helpers of the inventory views: sizes, durations, times, duration parsing, redaction."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reconciler.inventory.reads import (
    human_duration,
    human_size,
    parse_duration,
    redact_secrets,
    utc_iso,
)
from reconciler.model.errors import ConfigError


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (1288490189, "1.2 GiB"), (None, "-")],
)
def test_sizes_are_shown_in_binary_units(size: object, text: str) -> None:
    assert human_size(size) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (192, "3m 12s"), (3600, "1h"), (90061, "1d 1h"), (345000, "3d 23h")],
)
def test_durations_show_the_two_largest_units(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("26h", timedelta(hours=26)),
        ("3d", timedelta(days=3)),
        ("90m", timedelta(minutes=90)),
        ("1h30m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        ("2w", timedelta(weeks=2)),
    ],
)
def test_durations_are_parsed_from_unit_suffixes(text: str, delta: timedelta) -> None:
    assert parse_duration(text) == delta


@pytest.mark.parametrize("text", ["", "26", "h", "3x", "1h 30", "-1h"])
def test_bad_durations_are_configuration_errors(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid duration"):
        parse_duration(text)


def test_times_are_utc_iso_to_the_second() -> None:
    assert utc_iso("2026-11-21T22:00:00.969Z") == "2026-11-21T22:00:00Z"
    assert utc_iso("2026-11-21T23:00:00+01:00") == "2026-11-21T22:00:00Z"
    assert utc_iso(None) == "-"


def test_secrets_are_replaced_wherever_they_appear() -> None:
    obj = {
        "source": {
            "objectStorage": {"connectionString": "k=v", "url": "u"},
            "kafka": {"credentials": {"username": "x"}},
        }
    }
    assert redact_secrets(obj) == {
        "source": {
            "objectStorage": {"connectionString": "(sensitive)", "url": "u"},
            "kafka": {"credentials": "(sensitive)"},
        }
    }
