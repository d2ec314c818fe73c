"""The settings' command-line options are generated from the one settings table.

Each setting's flag, metavar, type and bounds, help, default and variable are said once, in
``reconciler.settings.table``; the options declare no default and read no variable of their
own, so only a value typed on the command line reaches ``Settings.override`` as explicit.
``--help`` still lists every option with its help, default and variable.
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from reconciler.cli import cli
from reconciler.cli.config import leaves
from reconciler.model.errors import ConfigError
from reconciler.settings.table import BY_PARAM, SETTINGS, default_of, setting_named
from tests.support.cli import run_cli
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
COMMANDS = ("validate", "plan", "apply", "watch", "get", "export", "check", "discover", "state")


def setting_params() -> list[tuple[str, click.Parameter]]:
    """Return (command, parameter) for every setting's parameter of every command."""
    found = []
    for name in (*COMMANDS, "render", "config"):
        command = cli.get_command(click.Context(cli), name)
        assert command is not None, name
        for leaf in leaves(command):
            found += [(f"{name} {leaf.name}", p) for p in leaf.params if p.name in BY_PARAM]
    return found


def test_every_setting_option_takes_its_flag_from_the_table_and_no_default_or_variable() -> None:
    params = setting_params()
    assert {p.name for _, p in params} >= {s.param for s in SETTINGS if s.flag}
    for where, param in params:
        setting = BY_PARAM[str(param.name)]
        if isinstance(param, click.Argument):  # the manifest paths
            continue
        assert isinstance(param, click.Option), where
        assert param.opts == [setting.flag], where
        assert param.envvar is None, (where, param.name)
        assert param.default is None or "UNSET" in repr(param.default), (where, param.name)


def test_the_wait_timeout_default_is_said_once_by_the_waiting_it_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reconciler.apply import waiting

    monkeypatch.setattr(waiting, "DEFAULT_WAIT_TIMEOUT", 1234.0)
    assert default_of(setting_named("waitTimeout")) == 1234.0
    help_text = " ".join(run_cli(["apply", "--help"], {}).stdout.split())
    wanted = (
        "Seconds to wait for each pipe's state [x>0; default: 1234; env RECONCILE_WAIT_TIMEOUT]."
    )
    assert wanted in help_text


def test_no_other_module_spells_the_wait_timeout() -> None:
    spelled = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "reconciler").rglob("*.py")
        if "emulator" not in path.parts and re.search(r"\b600(\.0)?\b", path.read_text("utf-8"))
    )
    assert spelled == ["reconciler/apply/waiting.py"]


@pytest.mark.parametrize("command", [["plan"], ["apply"], ["get", "services"], ["state", "rm"]])
def test_help_lists_every_setting_option_with_its_help_and_variable(command: list[str]) -> None:
    result = run_cli([*command, "--help"], {})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    leaf = cli.get_command(click.Context(cli), command[0])
    for name in command[1:]:
        assert isinstance(leaf, click.Group)
        leaf = leaf.get_command(click.Context(leaf), name)
    assert leaf is not None
    for param in leaf.params:
        setting = BY_PARAM.get(str(param.name))
        if setting is None or setting.flag is None:
            continue
        assert setting.flag in text
        assert isinstance(param, click.Option) and param.help, setting.flag
        assert " ".join(param.help.split()) in text, setting.flag  # the row's, or the command's
        if setting.variable:
            assert f"env {setting.variable}]" in text, setting.flag


def test_watch_waits_its_loops_own_default_for_the_state_lock_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import reconciler.watch
    from reconciler.watch import WatchOptions

    seen: list[WatchOptions] = []

    def stop(**given: object) -> None:
        seen.append(WatchOptions(**given))  # type: ignore[arg-type]
        raise ConfigError("stopped before watching")

    monkeypatch.setattr(reconciler.watch, "WatchOptions", stop)
    for args, expected in (([], WatchOptions().lock_timeout), (["--lock-timeout", "3"], 3.0)):
        result = run_cli(["watch", str(EXAMPLES), *args], {})
        assert "stopped before watching" in result.stderr, result.output
        assert seen.pop().lock_timeout == expected
    assert WatchOptions().lock_timeout == 10.0  # what docs/concepts/watch.md says
    help_text = " ".join(run_cli(["watch", "--help"], {}).stdout.split())
    assert "another apply may hold it) [x>=0; default: 10]." in help_text


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RECONCILE_WAIT_TIMEOUT", "0"),
        ("RECONCILE_MAX_WAIT", "nan"),
        ("RECONCILE_MAX_ATTEMPTS", "0"),
        ("RECONCILE_REQUEST_DEADLINE", "inf"),
    ],
)
def test_a_variable_out_of_its_settings_bounds_is_refused_naming_it(
    variable: str, value: str
) -> None:
    result = run_cli(["config"], {variable: value})
    assert result.exit_code == 1
    assert f"Error: {variable}: expected a " in result.stderr
    assert "internal error" not in result.output


def test_only_what_the_command_line_gave_is_explicit() -> None:
    result = run_cli(
        ["config", "-o", "json", "--timeout", "7"],
        {"RECONCILE_MAX_WAIT": "5", "RECONCILE_WORKSPACE": "blue"},
    )
    assert result.exit_code == 0, result.output
    found = {s["key"]: (s["value"], s["source"]) for s in result.json()["settings"]}
    assert found["timeout"] == ("7.0", "flag --timeout")
    assert found["limits.maxWait"] == ("5.0", "env RECONCILE_MAX_WAIT")
    assert found["workspace"] == ("blue", "env RECONCILE_WORKSPACE")
    assert found["parallelism"] == ("8", "default")


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("limits.maxAttempts", "3", 3),
        ("limits.maxAttempts", "0", None),
        ("parallelism", "256", 256),
        ("parallelism", "257", None),
        ("timeout", "0.5", 0.5),
        ("timeout", "0", None),
        ("timeout", "inf", None),
        ("lockTimeout", "0", 0.0),
        ("lockTimeout", "inf", float("inf")),
        ("lockTimeout", "nan", None),
        ("waitTimeout", "soon", None),
    ],
)
def test_a_settings_text_is_typed_and_bounded_by_its_row(
    key: str, text: str, value: float | None
) -> None:
    setting = setting_named(key)
    if value is None:
        with pytest.raises(ConfigError, match=f"^VAR: expected a .* got '{text}'$"):
            setting.convert(text, "VAR")
    else:
        assert setting.convert(text, "VAR") == value
