"""The project file, env files and `reconcile config`: discovery, validation, precedence, masking."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.cli import SECRET_ENV, UNPACED, run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a project file, its manifests, and the current directory inside it."""
    monkeypatch.delenv("RECONCILE_CONFIG")
    for name in [n for n in __import__("os").environ if n.startswith("RECONCILE_")]:
        monkeypatch.delenv(name)
    shutil.copytree(EXAMPLES, tmp_path / "manifests")
    (tmp_path / "reconcile.yaml").write_text(
        "# yaml-language-server: $schema=schemas/project.schema.json\n"
        "manifests: [manifests]\n"
        "state: .reconcile/state.json\n"
        "parallelism: 4\n"
        "rates:\n"
        "  management: 5/10\n"
        "envFile: .env\n"
        "limits:\n"
        "  maxAttempts: 3\n",
        encoding="utf-8",
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def settings(env: dict[str, str], *args: str) -> dict[str, tuple[str, str]]:
    result = run_cli(["config", "-o", "json", *args], env)
    assert result.exit_code == 0, result.output
    return {s["key"]: (s["value"], s["source"]) for s in result.json()["settings"]}


def test_project_file_is_found_from_a_subdirectory_and_paths_are_relative_to_it(
    project: Path,
) -> None:
    found = settings({})
    assert found["manifests"] == ("../manifests", "../reconcile.yaml:2")
    assert found["state"] == ("../.reconcile/state.json", "../reconcile.yaml:3")


def test_precedence_is_flag_then_environment_then_project_file_then_default(
    project: Path,
) -> None:
    assert settings({})["parallelism"] == ("4", "../reconcile.yaml:4")
    assert settings({})["timeout"] == ("30.0", "default")
    assert settings({})["limits.maxAttempts"] == ("3", "../reconcile.yaml:9")
    env_attempts = {"RECONCILE_MAX_ATTEMPTS": "5"}
    assert settings(env_attempts)["limits.maxAttempts"] == ("5", "env RECONCILE_MAX_ATTEMPTS")
    env = {"RECONCILE_BASE_URL": "http://127.0.0.1:1"}
    assert settings(env)["baseUrl"] == ("http://127.0.0.1:1", "env RECONCILE_BASE_URL")
    assert settings(env, "--parallelism", "2")["parallelism"] == ("2", "flag --parallelism")
    assert settings(env, "--base-url", "http://127.0.0.1:2")["baseUrl"][1] == "flag --base-url"


def test_config_masks_secrets_and_names_the_env_file_that_set_them(project: Path) -> None:
    (project / ".env").write_text(
        "RECONCILE_KEY_SECRET=very-secret-1\nRECONCILE_KEY_ID=from-file\n", encoding="utf-8"
    )
    result = run_cli(["config"], {"RECONCILE_KEY_ID": "from-env"})
    assert result.exit_code == 0, result.output
    assert "very-secret-1" not in result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert (
        "****" in rows["keySecret"]
        and "env file ../.env (RECONCILE_KEY_SECRET)" in rows["keySecret"]
    )
    assert "from-env" in rows["keyId"] and "env RECONCILE_KEY_ID" in rows["keyId"]
    assert "already set, kept: RECONCILE_KEY_ID" in result.stdout


def test_env_file_flag_is_read_first_and_a_missing_one_is_an_error(project: Path) -> None:
    (project / "a.env").write_text("RECONCILE_BASE_URL=http://127.0.0.1:7\n", encoding="utf-8")
    (project / ".env").write_text("RECONCILE_BASE_URL=http://127.0.0.1:8\n", encoding="utf-8")
    found = settings({}, "--env-file", "../a.env")
    assert found["baseUrl"] == ("http://127.0.0.1:7", "env file ../a.env (RECONCILE_BASE_URL)")
    missing = run_cli(["config", "--env-file", "nope.env"], {})
    assert missing.exit_code == 1 and "env file nope.env does not exist" in missing.stderr


def test_config_flag_before_or_after_the_command_names_the_project_file(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere.yaml"
    other.write_text("parallelism: 3\n", encoding="utf-8")
    assert settings({}, "--config", str(other))["parallelism"][0] == "3"
    result = run_cli(["--config", str(other), "config", "-o", "json"], {})
    assert result.json()["projectFile"] == str(other)


def test_an_invalid_project_file_is_reported_at_file_line_and_nothing_runs(
    project: Path,
) -> None:
    (project / "reconcile.yaml").write_text(
        "manifests: [manifests]\nparalelism: 4\nrates:\n  management: fast\n"
        "keySecret: do-not-echo-me\n",
        encoding="utf-8",
    )
    result = run_cli(["plan"], {})
    assert result.exit_code == 1
    assert "reconcile.yaml:2:1: paralelism: unknown field" in result.stderr
    assert "(did you mean 'parallelism'?)" in result.stderr
    assert "reconcile.yaml:4:3: rates.management: 'fast' is not a request budget" in result.stderr
    assert "reconcile.yaml:5:1: keySecret: credentials do not belong" in result.stderr
    assert "RECONCILE_KEY_SECRET" in result.stderr
    assert "do-not-echo-me" not in result.output
    # Commands that read no settings still work next to a broken project file.
    assert run_cli(["version"], {}).exit_code == 0


def test_the_example_manifests_plan_with_only_the_project_file_after_copying_env_example(
    project: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    unset: dict[str, str | None] = {name: None for name in SECRET_ENV}
    shutil.copy(project / "manifests" / ".env.example", project / ".env")
    monkeypatch.chdir(project)
    result = run_cli(["plan", "--detailed-exitcode", *UNPACED], {**emulator.env(), **unset})  # type: ignore[dict-item]
    assert result.exit_code == 2, result.output
    assert "Plan: 2 to create, 8 to update" in result.stdout
    assert "demo-password" not in result.output
    (project / ".env").unlink()  # the .env was what supplied the secrets
    without = run_cli(["plan", *UNPACED], {**emulator.env(), **unset})  # type: ignore[dict-item]
    assert without.exit_code == 1 and "environment variable KAFKA_USER is not set" in without.stderr


def test_plan_without_paths_or_project_manifests_says_where_to_name_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECONCILE_CONFIG")
    monkeypatch.chdir(tmp_path)
    for command in (["plan"], ["apply", "--auto-approve"]):
        result = run_cli(command, {})
        assert result.exit_code == 1
        assert (
            "no manifests: give PATHS, or name them under `manifests:` in reconcile.yaml"
            in result.stderr
        )


def test_config_shows_the_real_defaults_of_the_limits_and_the_state_location(
    project: Path,
) -> None:
    found = settings({})
    assert found["limits.maxWait"] == ("60.0", "default")
    assert found["limits.retryBudget"] == ("120.0", "default")
    assert found["limits.maxAttempts"] == ("3", "../reconcile.yaml:9")
    assert found["limits.requestDeadline"] == ("60.0", "default")
    assert found["limits.maxResponseSize"] == ("16MiB", "default")
    assert found["rates.dashboards"] == ("100/60", "default")
    (project / "reconcile.yaml").write_text("manifests: [manifests]\n", encoding="utf-8")
    assert settings({})["limits.maxAttempts"] == ("6", "default")
    assert settings({})["state"] == ("../.reconcile/state.json", "default")
    url = {"RECONCILE_BASE_URL": "http://127.0.0.1:3"}
    assert settings(url)["dashboardsUrl"] == ("http://127.0.0.1:3", "default (the base URL)")
