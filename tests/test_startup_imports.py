"""Start-up stays lean: which modules `validate`, `plan` and `--help` load (a module set, not a timing).

Each command runs in a fresh interpreter through the real entry point; at exit the child writes
the names in ``sys.modules`` to a file. The emulator's server stack, jsonschema (and its format
checkers), tqdm (without a terminal), httpx's own command line with rich, and package metadata
must not be imported by a command that does not use them: each costs start-up on every run.
A command imports no other command's module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.manifests_gen import write_manifests
from tests.support.emulator import Emulator

REPO = Path(__file__).resolve().parent.parent

# Never needed by a command that is not `reconcile emulator`, nor to report manifest errors.
NOT_AT_START_UP = (
    "uvicorn",
    "starlette",
    "reconciler.emulator",
    "jsonschema",
    "tqdm",
    "rich",
    "httpx._main",
    "importlib.metadata",
)

_DUMP = (
    "import atexit, json, os, sys\n"
    "loaded = lambda: sorted(k for k, v in sys.modules.items() if v is not None)\n"
    "atexit.register(lambda: open(os.environ['MODULES_OUT'], 'w').write(json.dumps(loaded())))\n"
    "from reconciler.cli import main\n"
    "main()\n"
)


def modules_loaded(
    tmp_path: Path, args: list[str], env: dict[str, str] | None = None, script: str = _DUMP
) -> set[str]:
    """Run ``reconcile ARGS`` in a fresh interpreter and return the modules it imported (at
    exit; or at the moment ``script`` writes them)."""
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, **(env or {}), "MODULES_OUT": str(out), "NO_COLOR": "1"},
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    return set(json.loads(out.read_text()))


def loaded_of(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    """Return the modules that are one of ``roots`` or inside one."""
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))


def test_validate_should_import_no_http_stack_emulator_jsonschema_or_tqdm(tmp_path: Path) -> None:
    write_manifests(tmp_path / "m", 3, 1, changed=1)
    modules = modules_loaded(tmp_path, ["validate", str(tmp_path / "m")])
    assert "reconciler.load.manifests" in modules  # it did run
    assert loaded_of(modules, (*NOT_AT_START_UP, "httpx", "httpcore", "asyncio")) == []


def test_validate_of_a_broken_manifest_should_load_jsonschema_for_its_messages_and_nothing_else(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: reconcile/v1\nkind: Pipe\nmetadata: {name: x}\nspec: {bogus: 1}\n")
    modules = modules_loaded(tmp_path, ["validate", str(bad)])
    assert "jsonschema" in modules  # the authority on error messages, loaded only on this path
    others = tuple(m for m in NOT_AT_START_UP if m != "jsonschema")
    assert loaded_of(modules, (*others, "httpx", "asyncio")) == []


def test_plan_should_import_neither_emulator_nor_jsonschema_nor_tqdm_without_a_terminal(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.reset(seedPipes=1, services=1)
    write_manifests(tmp_path / "m", 1, 1, changed=1)
    modules = modules_loaded(
        tmp_path,
        ["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s.json")],
        emulator.env(),
    )
    assert "reconciler.plan.compute" in modules  # it did plan
    assert "httpx" in modules
    assert loaded_of(modules, NOT_AT_START_UP) == []


def test_help_should_import_no_core_module(tmp_path: Path) -> None:
    modules = modules_loaded(tmp_path, ["--help"])
    assert "click" in modules
    assert loaded_of(modules, (*NOT_AT_START_UP, "httpx", "reconciler.load", "asyncio")) == []


def test_a_command_should_import_no_other_commands_module(tmp_path: Path) -> None:
    write_manifests(tmp_path / "m", 1, 1, changed=1)
    modules = modules_loaded(tmp_path, ["validate", str(tmp_path / "m")])
    commands = {m for m in modules if m.startswith("reconciler.cli.")}
    others = ("apply", "watch", "get", "inventory", "emulator", "state", "explain", "fmt")
    assert "reconciler.cli.validate" in commands
    assert sorted(commands & {f"reconciler.cli.{name}" for name in others}) == []


def test_help_should_still_list_every_command_in_order(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reconciler.cli import cli

    listed = CliRunner().invoke(cli, ["--help"]).output.split("Commands:")[1].splitlines()
    names = [line.split()[0] for line in listed if line.startswith("  ") and line[2] != " "]
    assert names[:3] == ["validate", "plan", "apply"]
    assert {"watch", "get", "export", "check", "state", "render", "compare", "config"} <= set(names)
