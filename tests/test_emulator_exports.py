"""The emulator's start-up: the two contract lines, then export lines; env secrets never printed."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx


def first_lines(*args: str, env: dict[str, str], count: int) -> tuple[list[str], list[str]]:
    """Start the emulator, read ``count`` stdout lines and the stderr lines, stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "emulator", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        out = [proc.stdout.readline().rstrip("\n") for _ in range(count)]
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in out if line.startswith("export ")
        )
        # The exports are enough to reach the emulator.
        response = httpx.get(
            exports["RECONCILE_BASE_URL"]
            + "/v1/organizations/"
            + exports["RECONCILE_ORGANIZATION_ID"],
            auth=(
                exports["RECONCILE_KEY_ID"],
                env.get("RECONCILE_KEY_SECRET") or exports["RECONCILE_KEY_SECRET"],
            ),
        )
        assert response.status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    return out, err.splitlines()


def test_startup_keeps_the_two_lines_then_prints_ready_to_paste_exports() -> None:
    env = {"RECONCILE_KEY_SECRET": "", "RECONCILE_DASHBOARDS_TOKEN": "", "RECONCILE_KEY_ID": ""}
    out, _ = first_lines(env=env, count=9)
    assert out[0].startswith("management API: http://127.0.0.1:")
    assert out[0].endswith("Basic demo-key-id:demo-key-secret")
    assert out[1].startswith("dashboards API: http://127.0.0.1:")
    url = out[0].split()[2]
    assert out[3:] == [
        f"export RECONCILE_BASE_URL={url}",
        f"export RECONCILE_DASHBOARDS_URL={url}",
        "export RECONCILE_ORGANIZATION_ID=7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c",
        "export RECONCILE_KEY_ID=demo-key-id",
        "export RECONCILE_KEY_SECRET=demo-key-secret",
        "export RECONCILE_DASHBOARDS_TOKEN=demo-dashboards-token",
    ]


def test_a_secret_read_from_the_environment_is_never_printed_and_print_env_is_sourceable() -> None:
    env = {
        "RECONCILE_KEY_SECRET": "s3cr3t-from-env",
        "RECONCILE_DASHBOARDS_TOKEN": "t0ken-from-env",
    }
    out, err = first_lines("--print-env", env=env, count=7)
    printed = "\n".join(out + err)
    assert "s3cr3t-from-env" not in printed and "t0ken-from-env" not in printed
    assert err[0].endswith("Basic demo-key-id:$RECONCILE_KEY_SECRET")
    assert err[1].endswith("Bearer $RECONCILE_DASHBOARDS_TOKEN")
    assert "# RECONCILE_KEY_SECRET is already set in this environment (not shown)" in out
    assert all(line.startswith(("export ", "#")) for line in out)
