"""`--env NAME` / RECONCILE_ENV on the commands, and `reconcile config --env`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from reconciler.state.backend import locked_state
from reconciler.state.stores import open_backend
from tests.support.cli import SECRET_ENV, run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with two environments; the current directory is its root."""
    for name in [n for n in os.environ if n.startswith("RECONCILE_")]:
        monkeypatch.delenv(name)
    shutil.copytree(EXAMPLES, tmp_path / "manifests")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_project(root: Path, url: str = "http://127.0.0.1:9") -> None:
    (root / "overlays" / "staging").mkdir(parents=True, exist_ok=True)  # named below: must exist
    (root / "reconcile.yaml").write_text(
        "manifests: [manifests]\n"
        "environments:\n"
        "  staging:\n"
        f"    baseUrl: {url}\n"
        "    envFile: .env.staging\n"
        "    keyId: {fromEnv: STAGING_KEY_ID}\n"
        "    keySecret: {fromEnv: STAGING_KEY_SECRET}\n"
        "    dashboardsToken: {fromEnv: STAGING_TOKEN}\n"
        "    overlays: [overlays/staging]\n"
        "  prod:\n"
        "    baseUrl: https://api.example.com\n"
        "    state: .reconcile/prod.json\n"
        "    keyId: {fromEnv: PROD_KEY_ID}\n"
        "    keySecret: {fromEnv: PROD_KEY_SECRET}\n"
        "    exclude: [Dashboard/staging-*]\n",
        encoding="utf-8",
    )


def test_config_env_shows_every_value_and_where_it_came_from(project: Path) -> None:
    write_project(project)
    (project / ".env.staging").write_text(
        "STAGING_KEY_ID=stg-id\nSTAGING_KEY_SECRET=stg-secret-value\n", encoding="utf-8"
    )
    result = run_cli(["config", "--env", "staging"], {"STAGING_TOKEN": "tok-secret-value"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "Environment:  staging (of prod, staging)" in result.stdout
    assert "reconcile.yaml:4: environments.staging.baseUrl" in rows["baseUrl"]
    assert "environment staging (its name)" in rows["workspace"]
    assert "environments.staging.keyId (fromEnv STAGING_KEY_ID)" in rows["keyId"]
    assert "****" in rows["keySecret"] and "****" in rows["dashboardsToken"]
    assert "60.0" in rows["limits.maxWait"] and "6" in rows["limits.maxAttempts"]
    assert "stg-secret-value" not in result.output and "tok-secret-value" not in result.output
    body = run_cli(["--env", "prod", "config", "-o", "json"], {}).json()
    assert body["environment"] == "prod" and body["exclude"] == ["Dashboard/staging-*"]
    settings = {s["key"]: s for s in body["settings"]}
    assert settings["state"]["source"] == "reconcile.yaml:12: environments.prod.state"


@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["plan"],
        ["apply", "--auto-approve"],
        ["state", "list"],
        ["check", "backups", "--max-age", "1d"],
        ["get", "services"],
        ["export", "--org", "--dir", "out"],
        ["config"],
    ],
)
def test_a_command_that_needs_an_environment_says_which_exist(
    project: Path, command: list[str]
) -> None:
    write_project(project)
    result = run_cli(command, {})
    assert result.exit_code == 1, result.output
    assert "reconcile.yaml defines environments (prod, staging): choose one with --env NAME" in (
        result.stderr
    )


def test_env_names_are_checked_and_commands_without_settings_need_none(project: Path) -> None:
    write_project(project)
    typo = run_cli(["validate", "--env", "stagin"], {})
    assert typo.exit_code == 1
    assert "--env stagin: no such environment in reconcile.yaml (did you mean 'staging'?)" in (
        typo.stderr
    )
    assert run_cli(["fmt", "--check", "manifests"], {}).exit_code in (0, 1)
    assert "choose one" not in run_cli(["fmt", "--check", "manifests"], {}).stderr
    (project / "reconcile.yaml").write_text("manifests: [manifests]\n", encoding="utf-8")
    none = run_cli(["validate", "--env", "prod"], {})
    assert (
        none.exit_code == 1 and "--env prod: reconcile.yaml defines no environments" in none.stderr
    )


def test_validate_and_state_follow_the_environment_chosen_by_variable(project: Path) -> None:
    write_project(project)
    for address, workspace, key in [
        (".reconcile/prod.json", "prod", "Pipe/in-prod"),
        (".reconcile/state.json", "staging", "Pipe/in-staging"),
    ]:
        with locked_state(open_backend(str(project / address), workspace)) as state:
            state.record(key, id="p-1")
            state.save()
    valid = run_cli(["validate"], {"RECONCILE_ENV": "prod"})
    assert valid.exit_code == 0, valid.output
    listed = run_cli(["state", "list", "-o", "json"], {"RECONCILE_ENV": "prod"})
    assert listed.exit_code == 0, listed.output
    assert listed.json() == ["Pipe/in-prod"]
    assert run_cli(["state", "list", "--env", "staging"], {}).stdout.split() == ["Pipe/in-staging"]


def test_plan_with_env_uses_that_environments_api_key_and_workspace(
    project: Path, emulator: Emulator
) -> None:
    write_project(project, emulator.url)
    (project / ".env.staging").write_text(
        f"STAGING_KEY_ID={emulator.key_id}\nSTAGING_KEY_SECRET={emulator.key_secret}\n"
        f"STAGING_TOKEN={emulator.token}\n",
        encoding="utf-8",
    )
    # A generic key in the environment must not be sent to the staging organization.
    generic = {"RECONCILE_KEY_ID": "wrong-key", "RECONCILE_KEY_SECRET": "wrong-secret"}
    args = ["plan", "--env", "staging", "--detailed-exitcode", "--rate", "none"]
    result = run_cli([*args, "--organization", emulator.org_id], {**SECRET_ENV, **generic})
    assert result.exit_code == 2, result.output
    assert "Plan:" in result.stdout
    (project / ".env.staging").write_text("STAGING_KEY_ID=x\n", encoding="utf-8")
    missing = run_cli(args, {})
    assert missing.exit_code == 1
    assert "environments.staging.keySecret: the environment variable STAGING_KEY_SECRET" in (
        missing.stderr
    )


def test_a_settings_error_before_options_are_parsed_is_still_one_json_document(
    project: Path,
) -> None:
    write_project(project)
    typo = run_cli(["validate", "--env=prd", "-o", "json"], {})
    assert typo.exit_code == 1
    assert typo.json()["exitCode"] == 1 and typo.json()["errors"][0]["type"] == "ConfigError"
    (project / "reconcile.yaml").write_text("environments:\n  prod:\n    bogus: 1\n")
    broken = run_cli(["plan", "--output", "json"], {})
    error = broken.json()["errors"][0]
    assert (error["file"], error["line"], error["path"]) == (
        "reconcile.yaml",
        3,
        "environments.prod.bogus",
    )
