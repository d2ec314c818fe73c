"""The README demo (``make demo``): the whole loop against the embedded emulator.

Starts the emulator on a free loopback port and takes its printed ``export`` lines as the
environment, then runs, as a user would, ``config``, ``validate``, ``plan``,
``apply --auto-approve`` and ``plan --detailed-exitcode`` with no manifest paths — the
project file (``reconcile.yaml``) names them — and stops the emulator. The state file lives
in a temporary directory (``--state``, a flag winning over the project file), removed at the
end, so the demo can be run again and again from the same seed. Secrets the example
manifests reference come from ``manifests/.env.example`` (``--env-file``) unless the
environment or ``.env`` sets them.
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

_EXPORT = re.compile(r"^export (?P<name>RECONCILE_[A-Z_]+)=(?P<value>.*)$")
_KNOWN = frozenset(
    {
        "RECONCILE_BASE_URL",
        "RECONCILE_DASHBOARDS_URL",
        "RECONCILE_ORGANIZATION_ID",
        "RECONCILE_KEY_ID",
        "RECONCILE_KEY_SECRET",
        "RECONCILE_DASHBOARDS_TOKEN",
    }
)


def start_emulator(
    extra: list[str] | None = None, timeout: float = 15.0
) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """Start ``reconcile emulator --port 0``; return the process and the variables it exports."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "emulator", "--port", "0", *(extra or [])],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    env: dict[str, str] = {}
    seen: set[str] = set()
    while time.monotonic() < deadline and not seen >= _KNOWN:
        line = proc.stdout.readline()
        if not line:
            break
        if m := _EXPORT.match(line.strip()):
            env[m["name"]] = shlex.split(m["value"])[0]
            seen.add(m["name"])
        elif line.startswith("# RECONCILE_"):
            seen.add(line[2:].split()[0])  # set in our own environment, which we pass on
    if not seen >= _KNOWN:
        proc.kill()
        raise SystemExit("the emulator did not start")
    return proc, env


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return 0 when the final plan shows no changes."""
    args = sys.argv[1:] if argv is None else argv
    paths = args[:1]  # none: the project file names the manifests
    examples = Path(args[0] if args else "manifests") / ".env.example"
    started = time.monotonic()
    proc, api_env = start_emulator()
    env = {**os.environ, **api_env}
    scratch = tempfile.TemporaryDirectory(prefix="reconcile-demo-")  # removed when done
    state = Path(scratch.name) / "state.json"
    click.secho(
        f"Emulator running at {api_env['RECONCILE_BASE_URL']} (organization {api_env['RECONCILE_ORGANIZATION_ID']})",
        bold=True,
    )
    given = ["--state", str(state), "--env-file", str(examples)]
    steps = [
        ["config", *paths, *given],
        ["validate", *paths],
        ["plan", *paths, *given],
        ["apply", *paths, "--auto-approve", *given],
        ["plan", *paths, "--detailed-exitcode", *given],
    ]
    code = 1
    try:
        for step in steps:
            click.secho(f"\n$ reconcile {shlex.join(step)}", fg="cyan", bold=True)
            result = subprocess.run(
                [sys.executable, "-m", "reconciler", *step], env=env, check=False
            )
            code = result.returncode
            if step[0] in ("config", "validate", "apply") and code != 0:
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
        scratch.cleanup()


if __name__ == "__main__":
    sys.exit(main())
