"""``watch`` reads its settings again while it runs: SIGHUP re-reads the project file, a changed
env file is read at the next cycle (a rotated key is picked up); the request budget is half the
project's unless --rate is given; durations, shares and listen addresses parse or are refused
plainly (table-driven)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest

from reconciler.cli.watch import Duration, Fraction
from reconciler.model.errors import ConfigError
from reconciler.watch import parse_listen
from tests.support.cli import run_cli
from tests.support.emulator import Emulator
from tests.support.watch import WATCH_FAST, WatchProcess, project, until


def _project(emulator: Emulator, tmp_path: Path, secret: str) -> tuple[Path, dict[str, str]]:
    directory = project(tmp_path)
    (directory / "reconcile.yaml").write_text(
        "manifests: [manifests]\nstate: state.json\n"
        f"organizationId: {emulator.org_id}\nrates: {{management: 600/10}}\nenvFile: .env\n"
    )
    (directory / ".env").write_text(f"RECONCILE_KEY_SECRET={secret}\n")
    env = {k: v for k, v in emulator.env().items() if k != "RECONCILE_KEY_SECRET"}
    env["RECONCILE_CONFIG"] = str(directory / "reconcile.yaml")
    return directory, env


def _apply(directory: Path, env: dict[str, str], emulator: Emulator) -> None:
    result = run_cli(
        [
            "apply",
            str(directory / "manifests"),
            "--state",
            str(directory / "state.json"),
            "--auto-approve",
            "--rate",
            "none",
        ],
        {**env, "RECONCILE_KEY_SECRET": emulator.key_secret, "RECONCILE_CONFIG": "/dev/null"},
    )
    assert result.exit_code == 0, result.output


def test_sighup_reads_the_project_file_again(emulator: Emulator, tmp_path: Path) -> None:
    directory, env = _project(emulator, tmp_path, emulator.key_secret)
    _apply(directory, env, emulator)
    watch = WatchProcess(["--interval", "1s", "--jitter", "0"], directory, env).start()
    try:
        watch.wait_for_line(r"management budget 300/10s")  # half the project's 600/10
        watch.wait_for_line(r"cycle 1: in-sync")
        assert any(r["resource"] == "Dashboard/pipes-overview" for r in watch.status()["resources"])
        config = directory / "reconcile.yaml"
        config.write_text(config.read_text().replace("[manifests]", "[manifests/pipes]"))
        watch.process.send_signal(signal.SIGHUP)
        watch.wait_for_line(r"SIGHUP: the project file is read again")
        until(
            lambda: all(r["kind"] == "Pipe" for r in watch.status()["resources"]),
            what="the resources of the new manifests",
        )
    finally:
        assert watch.terminate() == 0


def test_a_changed_env_file_is_read_at_the_next_cycle(emulator: Emulator, tmp_path: Path) -> None:
    directory, env = _project(emulator, tmp_path, emulator.key_secret)
    _apply(directory, env, emulator)
    watch = WatchProcess([*WATCH_FAST], directory, env).start()  # unpaced: not the subject
    try:
        watch.wait_for_line(r"cycle 1: in-sync")
        (directory / ".env").write_text("RECONCILE_KEY_SECRET=a-revoked-secret\n")
        failed = watch.wait_for_line(r"cycle \d+: failed").string
        assert "a-revoked-secret" not in failed and "401" in failed
        assert watch.get("/readyz").status_code == 503
        (directory / ".env").write_text(f"RECONCILE_KEY_SECRET={emulator.key_secret}\n")
        until(lambda: watch.get("/readyz").status_code == 200, what="recovery after the fix")
    finally:
        assert watch.terminate() == 0
    assert emulator.key_secret not in "\n".join(watch.lines)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("5m", 300.0), ("1h", 3600.0), ("500ms", 0.5), ("90", 90.0), ("1.5m", 90.0)],
)
def test_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["5 minutes", "", "m", "nan"])
def test_a_duration_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(click.BadParameter, match="is not a duration"):
        Duration().convert(text, None, None)


@pytest.mark.parametrize("text", ["0s", "0", "0ms", "-1m", "-5"])
def test_a_duration_of_zero_or_less_is_refused_saying_it_must_be_more_than_0(text: str) -> None:
    with pytest.raises(click.BadParameter, match=r"must be more than 0 \(got "):
        Duration().convert(text, None, None)


@pytest.mark.parametrize(("flag", "what"), [("--interval", "interval"), ("--lease", "lease")])
def test_watch_interval_0s_is_a_usage_error_naming_the_flag_and_saying_more_than_0(
    flag: str, what: str
) -> None:
    result = run_cli(["watch", "manifests", flag, "0s"], {})
    assert result.exit_code == 1
    assert f"Error: Invalid value for '{flag}': the {what} must be more than 0 (got '0s')" in (
        result.stderr
    )
    assert "not a duration" not in result.stderr
    assert result.stdout == ""


def test_watch_help_says_jitter_takes_a_fraction_or_a_percent_of_the_interval() -> None:
    result = run_cli(["watch", "--help"], {})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    jitter = text[text.index("--jitter") : text.index("--lease")]
    assert jitter.startswith("--jitter FRACTION|PERCENT ")
    assert "0–100% of the interval" in jitter and "[default: 10%]" in jitter
    assert "0<=x<=1" not in jitter


@pytest.mark.parametrize(
    ("text", "share"), [("10%", 0.1), ("0", 0.0), ("0.25", 0.25), ("100%", 1.0)]
)
def test_jitter_reads_as_a_share_of_the_interval(text: str, share: float) -> None:
    assert Fraction().convert(text, None, None) == share


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.0.0.1:9464", ("127.0.0.1", 9464)),
        ("[::1]:0", ("::1", 0)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
    ],
)
def test_listen_addresses_split_into_host_and_port(text: str, address: tuple[str, int]) -> None:
    assert parse_listen(text) == address


@pytest.mark.parametrize("text", ["9464", "localhost", ":9464", "host:99999", "host:http"])
def test_a_listen_address_without_host_and_port_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="give HOST:PORT"):
        parse_listen(text)


def test_a_taken_listen_port_is_a_plain_error_and_leaves_no_lease_behind(tmp_path: Path) -> None:
    directory = project(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "reconciler",
                "watch",
                "manifests",
                "--state",
                "state.json",
                "--listen",
                f"127.0.0.1:{port}",
            ],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "RECONCILE_CONFIG": os.devnull},
        )
    assert done.returncode == 1, done.stderr
    assert (
        f"Error: --listen 127.0.0.1:{port}: cannot listen there (Address already in use"
        in done.stderr
    )
    assert not (directory / "state.json.watch.json").exists()


def test_watch_env_name_watches_that_environment_of_the_project(
    emulator: Emulator, tmp_path: Path
) -> None:
    directory = project(tmp_path)
    (directory / "reconcile.yaml").write_text(
        "manifests: [manifests]\n"
        "environments:\n"
        "  staging:\n"
        f"    baseUrl: {emulator.url}\n"
        f"    organizationId: {emulator.org_id}\n"
        "    state: .reconcile/staging.json\n"
        "    workspace: staging\n"
        "    keyId: {fromEnv: STAGING_KEY_ID}\n"
        "    keySecret: {fromEnv: STAGING_KEY_SECRET}\n"
        "    dashboardsToken: {fromEnv: STAGING_TOKEN}\n"
        "  prod:\n"
        "    baseUrl: https://api.example.com\n"
        "    state: .reconcile/prod.json\n"
        "    keyId: {fromEnv: PROD_KEY_ID}\n"
        "    keySecret: {fromEnv: PROD_KEY_SECRET}\n"
    )
    env = {
        "RECONCILE_CONFIG": str(directory / "reconcile.yaml"),
        "STAGING_KEY_ID": emulator.key_id,
        "STAGING_KEY_SECRET": emulator.key_secret,
        "STAGING_TOKEN": emulator.token,
    }
    watch = WatchProcess(["--env", "staging", *WATCH_FAST], directory, env).start()
    try:
        watch.wait_for_line(r"Environment staging: workspace staging")
        watch.wait_for_line(r"cycle 1: drift")  # nothing applied yet in this environment
        assert watch.status()["workspace"] == "staging"
    finally:
        assert watch.terminate() == 0
