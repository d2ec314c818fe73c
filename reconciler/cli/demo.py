"""The README demo (``make demo``): the whole loop against the embedded emulator.

Starts the emulator on a free loopback port, then runs, as a user would, ``validate``,
``plan``, ``apply --auto-approve`` and ``plan --detailed-exitcode`` on ``manifests/``, and
stops the emulator. The state file lives in a temporary directory so the demo can be run
again and again from the same seed. Secrets the example manifests reference come from
``manifests/.env.example`` unless the environment already sets them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

_LINE = re.compile(
    r"management API: (?P<url>http://\S+)\s+organization=(?P<org>\S+)\s+Basic (?P<key>[^:\s]+):(?P<secret>\S+)"
)
_TOKEN = re.compile(r"dashboards API: (?P<url>http://\S+)\s+Bearer (?P<token>\S+)")


def start_emulator(
    extra: list[str] | None = None, timeout: float = 15.0
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Start ``reconcile emulator --port 0`` and return the process and the client environment."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "emulator", "--port", "0", *(extra or [])],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    env: dict[str, str] = {}
    while time.monotonic() < deadline and "RECONCILE_DASHBOARDS_TOKEN" not in env:
        line = proc.stdout.readline()
        if not line:
            break
        if m := _LINE.search(line):
            env.update(
                RECONCILE_BASE_URL=m["url"],
                RECONCILE_ORGANIZATION_ID=m["org"],
                RECONCILE_KEY_ID=m["key"],
                RECONCILE_KEY_SECRET=m["secret"],
            )
        elif m := _TOKEN.search(line):
            env.update(RECONCILE_DASHBOARDS_URL=m["url"], RECONCILE_DASHBOARDS_TOKEN=m["token"])
    if "RECONCILE_DASHBOARDS_TOKEN" not in env:
        proc.kill()
        raise SystemExit("the emulator did not start")
    return proc, env


def read_env_file(path: Path) -> dict[str, str]:
    """Read ``KEY=VALUE`` lines (comments and blanks ignored)."""
    values: dict[str, str] = {}
    if path.exists():
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                values[key.strip()] = value.strip().strip("'\"")
    return values


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return 0 when the final plan shows no changes."""
    args = sys.argv[1:] if argv is None else argv
    manifests = Path(args[0]) if args else Path("manifests")
    started = time.monotonic()
    proc, api_env = start_emulator()
    env = {**read_env_file(manifests / ".env.example"), **os.environ, **api_env}
    state = Path(tempfile.mkdtemp(prefix="reconcile-demo-")) / "state.json"
    click.secho(
        f"Emulator running at {api_env['RECONCILE_BASE_URL']} (organization {api_env['RECONCILE_ORGANIZATION_ID']})",
        bold=True,
    )
    steps = [
        ["validate", str(manifests)],
        ["plan", str(manifests), "--state", str(state)],
        ["apply", str(manifests), "--auto-approve", "--state", str(state)],
        ["plan", str(manifests), "--detailed-exitcode", "--state", str(state)],
    ]
    code = 1
    try:
        for step in steps:
            click.secho(f"\n$ reconcile {shlex.join(step)}", fg="cyan", bold=True)
            result = subprocess.run(
                [sys.executable, "-m", "reconciler", *step], env=env, check=False
            )
            code = result.returncode
            if step[0] in ("validate", "apply") and code != 0:
                click.secho(f"step failed with exit code {code}", fg="red")
                return 1
        verdict = (
            "converged: the second plan shows no changes"
            if code == 0
            else f"NOT converged (exit {code})"
        )
        click.secho(
            f"\nDemo done in {time.monotonic() - started:.1f}s — {verdict}.",
            bold=True,
            fg="green" if code == 0 else "red",
        )
        return 0 if code == 0 else 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
