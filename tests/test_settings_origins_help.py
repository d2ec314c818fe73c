"""Help, the docs and errors say where a setting came from, environments included (polish of 23/25).

The order with ``environments:`` (flag > the environment's own value > variable > project file >
default) is stated by ``--help``, ``config --help`` and the docs; ``reconcile config`` marks a
generic variable an environment's own value overrode; ``compare`` does not list ``--env``; an
error about the state's address names the flag, variable or project key that gave it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from reconciler.settings import resolve
from reconciler.state.stores import open_backend
from tests.support.cli import run_cli
from tests.support.docs import page_text
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES
from tests.support.state_servers import free_port

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "hunter2-SECRETPW"
GENERIC_SECRET = "generic-secret-SECRETVALUE"
WITH_ENVIRONMENTS = (
    "flag > the environment's own value > environment variable > project file > default"
)
WITHOUT = "flag > environment variable > project file > default"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory without RECONCILE_* variables; the current directory."""
    for name in [n for n in os.environ if n.startswith("RECONCILE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_environments(root: Path, state: str | None = None) -> None:
    shutil.copytree(EXAMPLES, root / "manifests")
    (root / "reconcile.yaml").write_text(
        "manifests: [manifests]\n" + (f"state: {state}\n" if state else "") + "environments:\n"
        "  staging:\n"
        "    keyId: {fromEnv: STAGING_KEY_ID}\n"
        "  production:\n"
        "    keyId: {fromEnv: PRODUCTION_KEY_ID}\n"
        "    keySecret: {fromEnv: PRODUCTION_KEY_SECRET}\n",
        encoding="utf-8",
    )


def flat(text: str) -> str:
    """Return help text with its line wrapping undone."""
    return " ".join(text.split())


def test_help_and_docs_state_the_order_with_and_without_environments(project: Path) -> None:
    root = flat(run_cli(["--help"], {}).stdout)
    config = flat(run_cli(["config", "--help"], {}).stdout)
    docs = flat(page_text("concepts/environments.md"))
    for text in (root, config, docs):
        assert WITHOUT in text
        assert WITH_ENVIRONMENTS in text


def test_config_marks_a_generic_variable_an_environment_overrode(project: Path) -> None:
    write_environments(project)
    env = {
        "RECONCILE_KEY_ID": "generic-id",
        "RECONCILE_KEY_SECRET": GENERIC_SECRET,
        "RECONCILE_WORKSPACE": "shared",
        "RECONCILE_BASE_URL": "https://api.example.com",
        "PRODUCTION_KEY_ID": "prod-id",
        "PRODUCTION_KEY_SECRET": "prod-secret-SECRETVALUE",
    }
    result = run_cli(["config", "--env", "production"], env)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "(RECONCILE_KEY_ID ignored: environment production sets keyId)" in rows["keyId"]
    assert (
        "(RECONCILE_KEY_SECRET ignored: environment production sets keySecret)"
        in (rows["keySecret"])
    )
    assert (
        "(RECONCILE_WORKSPACE ignored: environment production sets workspace)"
        in (rows["workspace"])
    )
    assert "ignored" not in rows["baseUrl"] and "env RECONCILE_BASE_URL" in rows["baseUrl"]
    assert GENERIC_SECRET not in result.output and "prod-secret-SECRETVALUE" not in result.output
    body = run_cli(["config", "--env", "production", "-o", "json"], env).json()
    settings = {s["key"]: s for s in body["settings"]}
    assert settings["keyId"]["ignored"] == "RECONCILE_KEY_ID"
    assert "ignored" not in settings["baseUrl"]
    # staging writes no keySecret: the generic variable is used, and not marked
    staging = run_cli(["config", "--env", "staging"], {**env, "STAGING_KEY_ID": "stg-id"})
    rows = {line.split()[0]: line for line in staging.stdout.splitlines() if line.strip()}
    assert "env RECONCILE_KEY_SECRET" in rows["keySecret"] and "ignored" not in rows["keySecret"]
    assert "(RECONCILE_KEY_ID ignored: environment staging sets keyId)" in rows["keyId"]


def test_docs_environments_example_names_the_state_file_of_each_workspace(
    project: Path,
) -> None:
    readme = page_text("concepts/environments.md")
    example = re.search(r"```yaml\n# reconcile.yaml\n(manifests: \[base\]\n.*?)```", readme, re.S)
    assert example is not None
    for directory in ("base", "overlays/staging", "overlays/production"):
        (project / directory).mkdir(parents=True)
    (project / "reconcile.yaml").write_text(example.group(1), encoding="utf-8")
    comment = re.search(r"^state: .*\n(?:\s+#.*\n)*", example.group(1), re.M)
    assert comment is not None
    for name in ("staging", "production"):
        settings = resolve(environment=name, environ={})
        address, _warning = settings.state_address()
        backend = open_backend(address, settings.workspace)
        assert backend.description == f".reconcile/state.{name}.json"
        assert backend.description in comment.group(0)


def test_compare_does_not_list_env_but_still_accepts_it(project: Path) -> None:
    write_environments(project)
    shown = run_cli(["compare", "--help"], {}).stdout
    assert "--env NAME" not in shown
    assert "--env-file FILE" in shown and "--config FILE" in shown
    assert "--env NAME" in run_cli(["render", "--help"], {}).stdout
    given = run_cli(["compare", "staging", "production", "--env", "staging"], {})
    assert given.exit_code == 0, given.output
    assert given.stdout == run_cli(["compare", "staging", "production"], {}).stdout


@pytest.mark.parametrize(
    ("state", "env", "said"),
    [
        ("flag", {}, "--state ftp://… is not a known backend"),
        ("variable", {"RECONCILE_STATE": "ftp://x/y"}, "RECONCILE_STATE ftp://… is not a known"),
        ("project", {}, "reconcile.yaml:2: state s3://bucket-only: give s3://BUCKET/KEY"),
    ],
)
def test_a_state_address_error_names_where_the_address_came_from(
    project: Path, state: str, env: dict[str, str], said: str
) -> None:
    write_environments(project, "s3://bucket-only" if state == "project" else None)
    args = ["state", "list", "--env", "staging"]
    result = run_cli([*args, "--state", "ftp://x/y"] if state == "flag" else args, env)
    assert result.exit_code == 1, result.output
    assert said in result.stderr


def test_plan_and_migrate_name_the_option_or_variable_of_a_bad_address(
    project: Path, emulator: Emulator
) -> None:
    shutil.copytree(EXAMPLES, project / "manifests")
    env = {**emulator.env(), "RECONCILE_STATE": "ftp://x/y"}
    planned = run_cli(["plan", "manifests"], env)
    assert planned.exit_code == 1, planned.output
    assert "RECONCILE_STATE ftp://… is not a known backend" in planned.stderr
    moved = run_cli(["state", "migrate", "--state", "s.json", "--to", "ftp://x/y"], {})
    assert moved.exit_code == 1, moved.output
    assert "--to ftp://… is not a known backend" in moved.stderr


def test_a_postgres_connection_failure_names_where_the_url_came_from(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"postgresql://ops:{PASSWORD}@127.0.0.1:{free_port()}/ops"
    write_environments(project)
    by_variable = run_cli(["state", "list", "--env", "staging"], {"RECONCILE_STATE": url})
    assert by_variable.exit_code == 1, by_variable.output
    assert "cannot connect to the state database postgresql://ops@127.0.0.1" in by_variable.stderr
    assert "(workspace staging, from RECONCILE_STATE)" in by_variable.stderr
    write_environments(project / "p", url)
    monkeypatch.chdir(project / "p")
    by_project = run_cli(["state", "list", "--env", "production"], {})
    assert by_project.exit_code == 1, by_project.output
    assert "(workspace production, from reconcile.yaml:2: state)" in by_project.stderr
    for result in (by_variable, by_project):
        assert PASSWORD not in result.output


def test_plan_names_the_variable_of_a_postgres_url_it_cannot_connect_to(
    project: Path, emulator: Emulator
) -> None:
    shutil.copytree(EXAMPLES, project / "manifests")
    url = f"postgresql://ops:{PASSWORD}@127.0.0.1:{free_port()}/ops"
    planned = run_cli(["plan", "manifests"], {**emulator.env(), "RECONCILE_STATE": url})
    assert planned.exit_code == 1, planned.output
    assert "(workspace default, from RECONCILE_STATE)" in planned.stderr
    assert PASSWORD not in planned.output
