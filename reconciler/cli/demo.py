"""The README demo (``make demo``): the whole loop against the embedded emulator.

Starts the emulator on a free loopback port and takes its printed ``export`` lines as the
environment, then runs, as a user would, ``config``, ``validate``, ``plan``,
``apply --auto-approve`` and ``plan --detailed-exitcode`` with no manifest paths — the
project file (``reconcile.yaml``) names them — and stops the emulator. Then the two
environments of ``examples/environments`` (staging and production: two organizations of one
fresh emulator): ``compare``, ``plan --all-envs``, an apply per environment (each creating its
own ``events`` pipe from the one manifest without ``pipeId``), and a last ``plan --all-envs``
that must show no changes. The state files live in a temporary directory (``--state``, a flag
winning over the project file), removed at the end, so the demo can be run again and again
from the same seed. Secrets the example manifests reference come from ``manifests/.env.example``
(the environments example's from its own ``.env.example``) unless the environment or ``.env``
sets them.
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

__all__: list[str] = []


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
    scratch = tempfile.TemporaryDirectory(prefix="reconcile-demo-")  # removed at the end
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
    try:
        try:
            code = _run_steps(steps, env)
        finally:
            _stop(proc)
        if code == 0 and not args:
            code = environments_demo(state.parent / "environments-state.json")
    finally:
        scratch.cleanup()
    verdict = "converged: the last plans show no changes" if code == 0 else "NOT converged"
    click.secho(
        f"\nDemo done in {time.monotonic() - started:.1f}s — {verdict}.",
        bold=True,
        fg="green" if code == 0 else "red",
    )
    click.echo("Documentation: docs/index.md (mkdocs serve)")
    click.echo("Start a project of your own: reconcile init DIR")
    return 0 if code == 0 else 1


def environments_demo(state: Path) -> int:
    """Two environments (``examples/environments``) on one emulator serving two organizations."""
    project = Path(__file__).resolve().parents[2] / "examples" / "environments"
    if not (project / "reconcile.yaml").is_file():
        return 0  # an installed package without the repository's examples
    proc, api_env = start_emulator()
    env = {
        **os.environ,
        "RECONCILE_BASE_URL": api_env["RECONCILE_BASE_URL"],
        "RECONCILE_DASHBOARDS_URL": api_env["RECONCILE_DASHBOARDS_URL"],
    }
    for name in _KNOWN - {"RECONCILE_BASE_URL", "RECONCILE_DASHBOARDS_URL"}:
        env.pop(name, None)  # each environment brings its own organization and credentials
    click.secho(
        f"\nEnvironments: examples/environments — staging and production, two organizations "
        f"of one emulator at {api_env['RECONCILE_BASE_URL']}",
        bold=True,
    )
    given = ["--state", str(state), "--env-file", ".env.example"]
    steps = [
        ["compare", "staging", "production", "--env-file", ".env.example"],
        ["plan", "--all-envs", *given],
        ["apply", "--env", "staging", "--auto-approve", *given],
        ["apply", "--env", "production", "--auto-approve", *given],
        ["plan", "--all-envs", "--detailed-exitcode", *given],
    ]
    try:
        return _run_steps(steps, env, cwd=project)
    finally:
        _stop(proc)


def _run_steps(steps: list[list[str]], env: dict[str, str], cwd: Path | None = None) -> int:
    """Run each ``reconcile`` step as a user would; return the last exit code (1 on a failure)."""
    code = 1
    for step in steps:
        click.secho(f"\n$ reconcile {shlex.join(step)}", fg="cyan", bold=True)
        result = subprocess.run(
            [sys.executable, "-m", "reconciler", *step], env=env, cwd=cwd, check=False
        )
        code = result.returncode
        if step[0] in ("config", "validate", "apply", "compare") and code != 0:
            click.secho(f"step failed with exit code {code}", fg="red")
            return 1
    if code != 0:
        click.secho(f"the last plan did not converge (exit {code})", fg="red")
    return code


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


if __name__ == "__main__":
    sys.exit(main())
