"""The settings core API (reconciler.settings): precedence, provenance, environments, reload."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from reconciler.model.errors import ConfigError, ManifestErrors
from reconciler.plan.run import compute_plan
from reconciler.settings import (
    Settings,
    Source,
    list_environments,
    resolve,
    resolve_environments,
)
from tests.support.cli import SECRET_ENV
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
PROJECT = """\
manifests: [manifests]
organizationId: 7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c
state: .reconcile/state.json
parallelism: 4
envFile: .env
environments:
  staging:
    baseUrl: http://127.0.0.1:9001
    keyId: {fromEnv: STAGING_KEY_ID}
    keySecret: {fromEnv: STAGING_KEY_SECRET}
    overlays: [overlays/staging]
  prod:
    organizationId: 11111111-2222-4333-8444-555555555555
    baseUrl: https://api.example.com
    state: .reconcile/prod.json
    workspace: production
    envFile: .env.prod
    keyId: {fromEnv: PROD_KEY_ID}
    keySecret: {fromFile: secrets/prod-key}
    exclude: [Dashboard/staging-*]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with two environments, a shared env file, prod's own env file and secret file."""
    (tmp_path / "reconcile.yaml").write_text(PROJECT, encoding="utf-8")
    (tmp_path / ".env").write_text(
        "STAGING_KEY_ID=stg-id\nSTAGING_KEY_SECRET=stg-secret\n", encoding="utf-8"
    )
    (tmp_path / ".env.prod").write_text("PROD_KEY_ID=prod-id\n", encoding="utf-8")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "prod-key").write_text("prod-secret\n", encoding="utf-8")
    return tmp_path


def at(
    project: Path, environ: dict[str, str] | None = None, environment: str | None = None
) -> Settings:
    """Resolve the project's settings with only ``environ`` as the process environment."""
    return resolve(cwd=str(project), environ=environ or {}, environment=environment)


@pytest.mark.parametrize(
    ("explicit", "environ", "param", "value", "source"),
    [
        ({}, {}, "parallelism", 4, Source.PROJECT),
        ({"parallelism": 2}, {}, "parallelism", 2, Source.FLAG),
        ({}, {}, "timeout", 30.0, Source.DEFAULT),
        ({}, {}, "max_wait", 60.0, Source.DEFAULT),
        ({}, {}, "max_attempts", 6, Source.DEFAULT),
        ({}, {}, "max_response_size", "16MiB", Source.DEFAULT),
        ({}, {"RECONCILE_MAX_ATTEMPTS": "3"}, "max_attempts", 3, Source.ENV),
        (
            {"limits.maxAttempts": 2},
            {"RECONCILE_MAX_ATTEMPTS": "3"},
            "max_attempts",
            2,
            Source.FLAG,
        ),
        ({}, {"RECONCILE_WORKSPACE": "w1"}, "workspace", "w1", Source.ENV),
        ({}, {"STAGING_KEY_ID": "x"}, "key_id", None, Source.DEFAULT),
    ],
)
def test_without_an_environment_a_flag_beats_a_variable_beats_the_project_file_beats_the_default(
    tmp_path: Path,
    explicit: dict[str, object],
    environ: dict[str, str],
    param: str,
    value: object,
    source: Source,
) -> None:
    (tmp_path / "reconcile.yaml").write_text("manifests: [m]\nparallelism: 4\n", encoding="utf-8")
    settings = resolve(explicit, cwd=str(tmp_path), environ=environ)
    assert (settings.get(param), settings.resolved(param).source) == (value, source)


def test_provenance_names_the_flag_variable_env_file_or_project_line(project: Path) -> None:
    settings = at(project, {"RECONCILE_BASE_URL": "http://127.0.0.1:5"}).override({"timeout": 5.0})
    assert settings.resolved("timeout").where == "flag --timeout"
    assert settings.resolved("base_url").where == "env RECONCILE_BASE_URL"
    assert settings.resolved("parallelism").where.endswith("reconcile.yaml:4")
    assert settings.resolved("dashboards_url").where == "default (the base URL)"
    assert settings.get("dashboards_url") == "http://127.0.0.1:5"


def test_an_environment_brings_its_own_values_credentials_overlays_and_exclude(
    project: Path,
) -> None:
    prod = at(project, environment="prod")
    assert prod.environment_name == "prod"
    assert prod.get("organization") == "11111111-2222-4333-8444-555555555555"
    assert prod.workspace == "production"
    assert prod.get("key_id") == "prod-id" and prod.get("key_secret") == "prod-secret"
    assert prod.exclude == ("Dashboard/staging-*",) and prod.overlays == ()
    where = prod.resolved("state_path").where
    assert where.endswith("reconcile.yaml:15: environments.prod.state")
    key_where = prod.resolved("key_id").where
    assert key_where.endswith("environments.prod.keyId (fromEnv PROD_KEY_ID)")
    config = prod.api_config()
    assert (config.base_url, config.key_id, config.dashboards_url) == (
        "https://api.example.com",
        "prod-id",
        "https://api.example.com",
    )
    scope = prod.scope()
    assert (scope.workspace, scope.organization) == ("production", prod.organization)
    assert scope.state.endswith("prod.json")
    staging = at(project, environment="staging")
    assert staging.workspace == "staging"
    assert staging.resolved("workspace").where == "environment staging (its name)"
    assert len(staging.overlays) == 1 and staging.overlays[0].endswith("overlays/staging")


def test_two_environments_in_one_process_keep_their_own_keys_and_leave_os_environ_alone(
    project: Path,
) -> None:
    before = dict(os.environ)
    both = resolve_environments(cwd=str(project), environ={})
    assert sorted(both) == ["prod", "staging"]
    assert both["prod"].api_config().key_id == "prod-id"
    assert both["staging"].api_config().key_id == "stg-id"
    assert "PROD_KEY_ID" not in both["staging"].environ  # prod's env file is prod's only
    assert dict(os.environ) == before


def test_an_environment_value_beats_the_generic_variable_and_a_flag_beats_both(
    project: Path,
) -> None:
    environ = {"RECONCILE_KEY_ID": "generic", "RECONCILE_BASE_URL": "http://127.0.0.1:1"}
    prod = resolve(cwd=str(project), environ=environ, environment="prod")
    assert prod.get("key_id") == "prod-id" and prod.get("base_url") == "https://api.example.com"
    flagged = prod.override({"base_url": "http://127.0.0.1:2"})
    assert flagged.get("base_url") == "http://127.0.0.1:2"
    assert flagged.resolved("base_url").source is Source.FLAG


def test_a_missing_credential_variable_is_named_with_its_project_line(project: Path) -> None:
    (project / ".env").write_text("STAGING_KEY_ID=stg-id\n", encoding="utf-8")
    staging = resolve(cwd=str(project), environ={}, environment="staging")
    with pytest.raises(
        ConfigError,
        match=r"reconcile.yaml:10: environments.staging.keySecret: "
        r"the environment variable STAGING_KEY_SECRET is not set",
    ):
        staging.api_config()


@pytest.mark.parametrize(
    ("environment", "environ", "message"),
    [
        (
            "prd",
            {},
            r"--env prd: no such environment in .*reconcile.yaml \(did you mean 'prod'\?\); defined: prod, staging",
        ),
        (None, {"RECONCILE_ENV": "qa"}, r"RECONCILE_ENV qa: no such environment"),
    ],
)
def test_an_unknown_environment_is_refused_with_the_defined_ones(
    project: Path, environment: str | None, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve(cwd=str(project), environ=environ, environment=environment)


def test_without_a_choice_the_default_environment_is_used_or_the_run_is_told_which_exist(
    project: Path,
) -> None:
    unchosen = resolve(cwd=str(project), environ={})
    with pytest.raises(ConfigError, match=r"defines environments \(prod, staging\): choose one"):
        unchosen.require_environment()
    text = (project / "reconcile.yaml").read_text(encoding="utf-8")
    (project / "reconcile.yaml").write_text(
        "defaultEnvironment: staging\n" + text, encoding="utf-8"
    )
    assert unchosen.reload().environment_name == "staging"
    assert resolve(cwd=str(project), environ={"RECONCILE_ENV": "prod"}).environment_name == "prod"
    assert sorted(list_environments(cwd=str(project), environ={})) == ["prod", "staging"]


def test_literal_credentials_in_an_environment_are_refused_at_their_line_and_never_echoed(
    tmp_path: Path,
) -> None:
    (tmp_path / "reconcile.yaml").write_text(
        "environments:\n  prod:\n    keySecret: do-not-echo-me\n    keyId: {fromEnv: K}\n"
        "defaultEnvironment: prd\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestErrors) as caught:
        resolve(cwd=str(tmp_path), environ={})
    text = str(caught.value) + "".join(str(e) for e in caught.value.errors)
    assert "reconcile.yaml:3:5: environments.prod.keySecret: credentials are never written" in text
    assert "reconcile.yaml:5:1: defaultEnvironment: 'prd' is not one of the environments" in text
    assert "do-not-echo-me" not in text


def test_reload_reads_the_project_file_and_env_file_again(project: Path) -> None:
    first = resolve(cwd=str(project), environ={}, environment="staging")
    (project / "reconcile.yaml").write_text(
        PROJECT.replace("parallelism: 4", "parallelism: 7"), encoding="utf-8"
    )
    (project / ".env").write_text(
        "STAGING_KEY_ID=rotated\nSTAGING_KEY_SECRET=s\n", encoding="utf-8"
    )
    again = first.reload()
    assert (first.get("parallelism"), again.get("parallelism")) == (4, 7)
    assert again.api_config().key_id == "rotated"


def test_an_unreadable_secret_file_stops_only_what_needs_the_credential(project: Path) -> None:
    (project / "secrets" / "prod-key").unlink()
    prod = at(project, environment="prod")  # resolving (config, validate) still works
    assert prod.resolved("key_secret").where.endswith("secrets/prod-key: unreadable)")
    with pytest.raises(ConfigError, match=r"environments.prod.keySecret: cannot read secret file"):
        prod.api_config()


def test_no_secret_shows_in_the_repr_of_settings(project: Path) -> None:
    prod = at(project, environment="prod").override({"key_secret": "flag-secret-value"})
    text = repr(prod) + "".join(repr(r) for r in prod.rows())
    assert "flag-secret-value" not in text and "prod-secret" not in text
    assert "prod-id" not in text  # values are never in a repr, secret or not


def test_the_same_request_resolves_for_each_environment(project: Path) -> None:
    base = at(project).override({"parallelism": 2})
    prod, staging = base.for_environment("prod"), base.for_environment("staging")
    assert (prod.workspace, staging.workspace) == ("production", "staging")
    assert prod.get("parallelism") == staging.get("parallelism") == 2
    with pytest.raises(ConfigError, match="no such environment"):
        base.for_environment("qa")


def test_a_python_caller_plans_an_environment_with_its_env_files_secrets_and_key(
    tmp_path: Path, emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [*SECRET_ENV, *[n for n in os.environ if n.startswith("RECONCILE_")]]:
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(EXAMPLES, tmp_path / "manifests")
    (tmp_path / "reconcile.yaml").write_text(
        f"manifests: [manifests]\norganizationId: {emulator.org_id}\n"
        f"rates: {{management: none}}\nenvironments:\n  prod:\n    baseUrl: {emulator.url}\n"
        "    envFile: prod.env\n    keyId: {fromEnv: EMU_ID}\n    keySecret: {fromEnv: EMU_SECRET}\n"
        "    dashboardsToken: {fromEnv: EMU_TOKEN}\n",
        encoding="utf-8",
    )
    lines = [f"{k}={v}" for k, v in SECRET_ENV.items()]
    lines += [f"EMU_ID={emulator.key_id}", f"EMU_SECRET={emulator.key_secret}"]
    (tmp_path / "prod.env").write_text("\n".join([*lines, f"EMU_TOKEN={emulator.token}"]) + "\n")
    before = dict(os.environ)
    settings = resolve(cwd=str(tmp_path), environment="prod")
    with settings.secret_variables():
        plan = asyncio.run(compute_plan(settings.api_config(), settings.scope())).plan
    assert not plan.failed, [a.errors for a in plan.failed]
    assert len(plan.changed) == 10 and dict(os.environ) == before


def test_every_mistake_in_environments_is_reported_at_its_line_at_once(tmp_path: Path) -> None:
    (tmp_path / "reconcile.yaml").write_text(
        "environments:\n  prod:\n    overlay: [x]\n    exclude: [nokind]\n"
        "    keyId: {fromEnv: K, fromFile: y}\n  bad name:\n    baseUrl: ftp://x\n",
        encoding="utf-8",
    )
    with pytest.raises(ManifestErrors) as caught:
        resolve(cwd=str(tmp_path), environ={}, environment="prod")
    lines = [str(e).split("reconcile.yaml:", 1)[1] for e in caught.value.errors]
    assert lines == [
        "3:5: environments.prod.overlay: unknown field 'overlay' (did you mean 'overlays'?)",
        "4:15: environments.prod.exclude[0]: 'nokind' is not a KIND/NAME glob (e.g. "
        "Dashboard/staging-*)",
        "5:5: environments.prod.keyId: a secret reference takes exactly one of fromEnv or fromFile",
        "6:3: environments.bad name: 'bad name' is not an environment name: letters, digits, '.', "
        "'_' and '-', at most 64, starting with a letter or digit (it is also the environment's "
        "default workspace)",
        "7:5: environments.bad name.baseUrl: 'ftp://x' is not an http:// or https:// URL",
    ]


def test_the_client_names_where_each_connection_value_came_from(project: Path) -> None:
    prod = at(project, {"RECONCILE_MAX_WAIT": "5"}, environment="prod")
    config = prod.api_config()
    assert config.origin("base_url").endswith("reconcile.yaml:14: environments.prod.baseUrl")
    assert prod.origin("max_wait") == "RECONCILE_MAX_WAIT" and prod.origin("timeout") is None
    assert prod.override({"rate": "5/1"}).origin("rate") == "--rate"
    with pytest.raises(ConfigError, match=r"^RECONCILE_MAX_RESPONSE_SIZE: "):
        at(project, {"RECONCILE_MAX_RESPONSE_SIZE": "lots"}, environment="prod").api_config()


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("rate", lambda c: f"{c.rate.count}/{c.rate.seconds:g}"),
        ("dashboards_rate", lambda c: f"{c.dashboards_rate.count}/{c.dashboards_rate.seconds:g}"),
        ("parallelism", lambda c: c.parallelism),
        ("timeout", lambda c: c.timeout),
        ("max_attempts", lambda c: c.max_attempts),
        ("max_wait", lambda c: c.limits.max_wait),
        ("retry_budget", lambda c: c.limits.retry_budget),
        ("request_deadline", lambda c: c.limits.deadline),
        ("max_response_size", lambda c: f"{c.limits.max_response_bytes // (1 << 20)}MiB"),
    ],
)
def test_a_settings_default_should_be_the_clients_own(setting: str, expected: object) -> None:
    # The settings show the client's defaults without importing the HTTP stack (start-up);
    # both take them from ``client.defaults``, so they cannot drift apart.
    from reconciler.client.config import ApiConfig
    from reconciler.settings.table import default_of, setting_named

    client_default = expected(ApiConfig("", "", "", "", ""))  # type: ignore[operator]
    assert default_of(setting_named(setting)) == client_default
