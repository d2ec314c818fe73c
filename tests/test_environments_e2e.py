"""Environments end to end: the real CLI on the example project against real emulators.

The example (``examples/environments``) is copied to a temporary directory: staging is the
emulator's second organization (its own key and dashboards token), production the demo one.
Covers ``render`` and ``compare``, ``plan --all-envs`` in markdown and json, an apply per
environment each followed by a plan with exit 0, identity per workspace (a dashboard created in
staging is never adopted or pruned from production; the pipe manifest without ``pipeId``
creates a different pipe in each organization, production's with its overlay's replicas), an
overlay error's file:line, ``apply --all-envs`` refused, and two environments on two emulators
planned in one run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator import OTHER_ORG_ID
from tests.support.cli import UNPACED, copy_environments_example, environments_env, run_cli
from tests.support.emulator import Emulator, start_emulator, stop_emulator

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "environments"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the example project, as the current directory."""
    return copy_environments_example(tmp_path, monkeypatch)


def _validate(document: object) -> None:
    """Check an ``--all-envs`` JSON document against its schema (plan documents included)."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    schemas = EXAMPLE.parent.parent / "schemas"
    loaded = {
        name: json.loads((schemas / name).read_text(encoding="utf-8"))
        for name in ("plan-environments.schema.json", "plan.schema.json")
    }
    registry: Registry[object] = Registry().with_resources(
        (name, Resource.from_contents(doc)) for name, doc in loaded.items()
    )
    validator = jsonschema.Draft202012Validator(
        loaded["plan-environments.schema.json"], registry=registry
    )
    validator.validate(document)


def _dashboards(emulator: Emulator, org: str) -> list[str]:
    return sorted(
        d["name"] for d in emulator.data()["dashboards"].values() if d["organizationId"] == org
    )


def test_render_prints_each_environment_with_its_sources(project: Path) -> None:
    staging = run_cli(["render", "--env", "staging"], environments_env(project))
    production = run_cli(["render", "--env", "production", "-o", "json"], environments_env(project))
    assert staging.exit_code == 0, staging.output
    assert "# Source: base/organization.yaml, overlays/staging/organization.yaml\n" in (
        staging.stdout
    )
    assert "  name: Acme Analytics (staging)\n" in staging.stdout
    assert "# Source: overlays/staging/load-test.yaml\n" in staging.stdout
    body = production.json()
    keys = [m["key"] for m in body["manifests"]]
    assert keys == ["Dashboard/ingestion", "Organization/acme", "Pipe/events"]
    assert body["manifests"][0]["manifest"]["spec"]["tags"] == ["pipes", "production"]
    assert body["manifests"][2]["manifest"]["spec"]["scaling"] == {"replicas": 3}
    assert "# Source: base/pipes/events.yaml\n" in staging.stdout


def test_render_without_an_environment_names_those_defined(project: Path) -> None:
    result = run_cli(["render"], environments_env(project))
    assert result.exit_code == 1
    assert "defines environments (production, staging): choose one with --env NAME" in (
        result.stderr
    )


def test_compare_lists_resources_and_fields_that_differ(project: Path) -> None:
    result = run_cli(["compare", "staging", "production"], environments_env(project))
    assert result.exit_code == 0, result.output
    assert "+ Dashboard/load-test  (only in staging: overlays/staging/load-test.yaml)" in (
        result.stdout
    )
    assert '    spec.name: production "Acme Analytics" -> staging "Acme Analytics (staging)"' in (
        result.stdout
    )
    as_json = run_cli(
        ["compare", "staging", "production", "-o", "json", "--detailed-exitcode"],
        environments_env(project),
    )
    assert as_json.exit_code == 2
    keys = [r["key"] for r in as_json.json()["resources"]]
    assert keys == [
        "Dashboard/ingestion",
        "Dashboard/load-test",
        "Organization/acme",
        "Pipe/events",
    ]
    assert "    spec.scaling.replicas: production 3 -> staging 1\n" in result.stdout


def test_plan_all_envs_then_apply_each_environment_converges(
    project: Path, emulator: Emulator
) -> None:
    env = environments_env(project, emulator)
    markdown = run_cli(["plan", "--all-envs", "-o", "markdown", "--detailed-exitcode"], env)
    assert markdown.exit_code == 2, markdown.output
    assert markdown.stdout.startswith("### reconcile plan: 2 environments\n")
    assert "| `staging` | changes | 3 | 1 | 0 | 0 | 0 | 0 |" in markdown.stdout
    assert "| `production` | changes | 2 | 0 | 0 | 0 | 1 | 0 |" in markdown.stdout
    assert "#### Environment `production`" in markdown.stdout

    applied = run_cli(["apply", "--env", "staging", "--auto-approve", *UNPACED], env)
    assert applied.exit_code == 0, applied.output
    assert "Environment staging: workspace staging" in applied.stderr
    again = run_cli(["plan", "--env", "staging", "--detailed-exitcode", *UNPACED], env)
    assert again.exit_code == 0, again.output
    assert _dashboards(emulator, OTHER_ORG_ID) == ["Ingestion", "Load test"]

    # Production has its own workspace: staging's dashboards are neither adopted nor pruned.
    pruning = run_cli(["plan", "--env", "production", "--prune", "-o", "json"], env)
    actions = {a["resource"]: a["operation"] for a in pruning.json()["actions"]}
    assert actions == {
        "Dashboard/ingestion": "create",
        "Organization/acme": "noop",
        "Pipe/events": "create",
    }

    applied = run_cli(["apply", "--env", "production", "--auto-approve", "--prune", *UNPACED], env)
    assert applied.exit_code == 0, applied.output
    again = run_cli(["plan", "--env", "production", "--detailed-exitcode", *UNPACED], env)
    assert again.exit_code == 0, again.output
    assert _dashboards(emulator, emulator.org_id) == ["Ingestion"]
    assert _dashboards(emulator, OTHER_ORG_ID) == ["Ingestion", "Load test"]

    metrics = project / "plan.prom"
    final = run_cli(
        ["plan", "--all-envs", "-o", "json", "--detailed-exitcode", "--metrics-file", str(metrics)],
        env,
    )
    assert final.exit_code == 0, final.output
    assert 'reconcile_resources{command="plan",outcome="unchanged"} 7.0' in metrics.read_text()
    body = final.json()
    _validate(body)
    assert [(e["name"], e["result"]) for e in body["environments"]] == [
        ("staging", "no changes"),
        ("production", "no changes"),
    ]
    assert body["exitCode"] == 0
    assert "other-key-secret" not in final.output and "demo-key-secret" not in final.output


def _events_pipes(emulator: Emulator, org: str) -> list[dict[str, Any]]:
    """The live pipes named ``events`` on the organization's services."""
    data = emulator.data()
    services = {s["id"] for s in data["services"].values() if s["organizationId"] == org}
    return [
        p for p in data["pipes"].values() if p["serviceId"] in services and p["name"] == "events"
    ]


def test_one_pipe_manifest_creates_a_different_pipe_in_each_environment(
    project: Path, emulator: Emulator
) -> None:
    """base/pipes/events.yaml has no pipeId: each environment's first apply creates its own pipe
    on its organization's ``analytics`` service and records that pipe's id in its workspace."""
    env = environments_env(project, emulator)
    outputs = []
    for name in ("staging", "production"):
        applied = run_cli(["apply", "--env", name, "--auto-approve", *UNPACED], env)
        assert applied.exit_code == 0, applied.output
        assert "Pipe/events: applied\n" in applied.stdout
        outputs.append(applied.output)

    (staging_pipe,) = _events_pipes(emulator, OTHER_ORG_ID)
    (production_pipe,) = _events_pipes(emulator, emulator.org_id)
    recorded = {}
    for name in ("staging", "production"):
        shown = run_cli(["state", "show", "Pipe/events", "--env", name, "-o", "json"], env)
        assert shown.exit_code == 0, shown.output
        recorded[name] = shown.json()["id"]
    assert recorded == {"staging": staging_pipe["id"], "production": production_pipe["id"]}
    assert recorded["staging"] != recorded["production"]
    assert staging_pipe["scaling"]["replicas"] == 1
    assert production_pipe["scaling"]["replicas"] == 3
    assert production_pipe["settings"]["streaming_max_insert_wait_ms"] == 10000

    for name in ("staging", "production"):
        plan = run_cli(["plan", "--env", name, "--detailed-exitcode", *UNPACED], env)
        assert plan.exit_code == 0, plan.output
        outputs.append(plan.output)
    before = len(emulator.requests())
    for name in ("staging", "production"):
        again = run_cli(["apply", "--env", name, "--auto-approve", *UNPACED], env)
        assert again.exit_code == 0, again.output
        assert "No changes." in again.output
        outputs.append(again.output)
    assert [r for r in emulator.requests()[before:] if r["method"] != "GET"] == []
    assert len(_events_pipes(emulator, OTHER_ORG_ID)) == 1
    assert len(_events_pipes(emulator, emulator.org_id)) == 1
    assert not any("demo-password" in output for output in outputs)


def test_plan_all_envs_reports_a_failed_environment_and_plans_the_others(
    project: Path, emulator: Emulator
) -> None:
    env = {**environments_env(project, emulator), "PRODUCTION_KEY_SECRET": "wrong-secret"}
    result = run_cli(["plan", "--all-envs"], env)
    assert result.exit_code == 1
    assert "=== Environment staging" in result.stdout
    assert "Plan: 3 to create, 1 to update" in result.stdout
    assert "Environments: staging: changes; production: failed." in result.stdout
    assert "wrong-secret" not in result.output


def test_an_overlay_error_names_the_overlay_file_and_line(
    project: Path, emulator: Emulator
) -> None:
    overlay = project / "overlays" / "production" / "ingestion.yaml"
    overlay.write_text(overlay.read_text().replace("tags: [pipes, production]", "tags: pipes"))
    result = run_cli(["plan", "--all-envs"], environments_env(project, emulator))
    assert result.exit_code == 1
    assert (
        "Error: overlays/production/ingestion.yaml:5:3: spec.tags: expected a list, got string "
        "'pipes'\n" in result.stdout
    ), result.output
    assert "Environments: staging: changes; production: failed." in result.stdout
    assert not [r for r in emulator.requests() if r["method"] != "GET"]
    valid = run_cli(["validate", "--env", "production"], environments_env(project))
    assert valid.exit_code == 1
    assert valid.stdout.startswith("overlays/production/ingestion.yaml:5:3: spec.tags:")


def test_apply_refuses_all_envs(project: Path) -> None:
    result = run_cli(["apply", "--all-envs", "--auto-approve"], environments_env(project))
    assert result.exit_code == 1
    assert "apply takes exactly one environment" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "staging"], "--all-envs plans every environment: leave out --env"),
        (["--out", "p.json"], "--out saves the plan of one environment"),
    ],
    ids=["with_env", "with_out"],
)
def test_plan_all_envs_refuses_options_for_one_environment(
    project: Path, args: list[str], message: str
) -> None:
    result = run_cli(["plan", "--all-envs", *args, "-o", "json"], environments_env(project))
    assert result.exit_code == 1
    assert message in result.stderr
    _validate_errors = result.json()
    assert _validate_errors["exitCode"] == 1


def test_all_envs_in_a_project_without_environments_says_so(tmp_path: Path) -> None:
    (tmp_path / "reconcile.yaml").write_text("manifests: [m]\n")
    result = run_cli(
        ["validate", "--all-envs"], {"RECONCILE_CONFIG": str(tmp_path / "reconcile.yaml")}
    )
    assert result.exit_code == 1
    assert "--all-envs: the project file defines no environments" in result.stderr


def test_two_environments_on_two_emulators_in_one_run(tmp_path: Path) -> None:
    first, second = start_emulator(), start_emulator()
    try:
        (tmp_path / "base").mkdir()
        text = (EXAMPLE / "base" / "organization.yaml").read_text()
        (tmp_path / "base" / "organization.yaml").write_text(
            text.replace("name: Acme Analytics", "name: Acme on two emulators")
        )
        (tmp_path / "reconcile.yaml").write_text(
            "manifests: [base]\n"
            "environments:\n"
            + "".join(
                f"  {name}:\n"
                f"    baseUrl: {emu.url}\n"
                f"    organizationId: {emu.org_id}\n"
                "    keyId: {fromEnv: KEY_ID}\n"
                "    keySecret: {fromEnv: KEY_SECRET}\n"
                "    dashboardsToken: {fromEnv: TOKEN}\n"
                for name, emu in (("a", first), ("b", second))
            )
        )
        env = {
            "RECONCILE_CONFIG": str(tmp_path / "reconcile.yaml"),
            "RECONCILE_STATE": str(tmp_path / "state.json"),
            "KEY_ID": first.key_id,
            "KEY_SECRET": first.key_secret,
            "TOKEN": first.token,
        }
        result = run_cli(["plan", "--all-envs", "-o", "json"], env)
        assert result.exit_code == 0, result.output
        plans = {e["name"]: e["plan"]["summary"]["update"] for e in result.json()["environments"]}
        assert plans == {"a": 1, "b": 1}
        assert len(first.requests()) >= 1 and len(second.requests()) >= 1
    finally:
        stop_emulator(first)
        stop_emulator(second)


def test_the_readme_environments_section_project_file_is_valid() -> None:
    import re

    from ruamel.yaml import YAML

    from reconciler.load.project import project_errors
    from tests.support.docs import page_text

    section = page_text("concepts/environments.md").split("## Environments\n", 1)[1]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    project = YAML(typ="safe").load(blocks[0])
    assert project_errors(project) == []
    assert set(project["environments"]) == {"staging", "production"}
    workflow = YAML(typ="safe").load(blocks[1])
    assert set(workflow["jobs"]) == {"plan", "apply"}
    example = YAML(typ="safe").load((EXAMPLE / "reconcile.yaml").read_text(encoding="utf-8"))
    assert project_errors(example) == []


def test_all_envs_reads_each_environments_secrets_from_its_own_env_file(
    tmp_path: Path, emulator: Emulator
) -> None:
    """A manifest's ``fromEnv`` resolves from the environment's envFile, per environment."""
    from tests.support.cli import pipe_spec, write_manifest

    credentials = {
        "username": {"fromEnv": "ENV_KAFKA_USER"},
        "password": {"fromEnv": "ENV_KAFKA_PASSWORD"},
    }
    source = {"kafka": {"authentication": "PLAIN", "credentials": credentials}}
    write_manifest(tmp_path / "base" / "orders.yaml", "Pipe", "orders", pipe_spec(source=source))
    for name in ("a", "b"):
        (tmp_path / f"{name}.env").write_text(
            f"ENV_KAFKA_USER=user-{name}\nENV_KAFKA_PASSWORD=SECRET-{name}\n"
        )
    second = start_emulator()  # b on a server of its own: two environments, one seed
    try:
        (tmp_path / "reconcile.yaml").write_text(
            "manifests: [base]\nenvironments:\n"
            + "".join(
                f"  {name}:\n    organizationId: {emulator.org_id}\n    envFile: {name}.env\n"
                f"    baseUrl: {url}\n"
                for name, url in (("a", emulator.url), ("b", second.url))
            )
        )
        env = {
            **emulator.env(),
            "RECONCILE_CONFIG": str(tmp_path / "reconcile.yaml"),
            "RECONCILE_STATE": str(tmp_path / "state.json"),
        }
        result = run_cli(["plan", "--all-envs", "-o", "json"], env)
    finally:
        stop_emulator(second)
    assert result.exit_code == 0, result.output
    assert [e["result"] for e in result.json()["environments"]] == ["changes", "changes"]
    assert "SECRET-" not in result.output


def test_a_plan_saved_for_one_environment_is_refused_by_another(
    project: Path, emulator: Emulator
) -> None:
    env = environments_env(project, emulator)
    saved = run_cli(["plan", "--env", "staging", "--out", "staging.plan.json"], env)
    assert saved.exit_code == 0, saved.output
    before = len(emulator.requests())
    result = run_cli(["apply", "--env", "production", "--plan", "staging.plan.json"], env)
    assert result.exit_code == 1
    assert (
        "the saved plan was made for environment staging; this run targets production: apply it "
        "with --env staging" in result.stderr
    ), result.output
    assert [r for r in emulator.requests()[before:] if r["method"] != "GET"] == []
    applied = run_cli(
        ["apply", "--env", "staging", "--plan", "staging.plan.json", "--auto-approve"], env
    )
    assert applied.exit_code == 0, applied.output


def test_two_environments_on_one_organization_may_not_manage_one_dashboard(
    project: Path, emulator: Emulator
) -> None:
    """Production must never adopt (nor prune) the dashboard staging created: refused, with the
    manifest line and the other environment, before anything is sent."""
    config = project / "reconcile.yaml"
    text = config.read_text().replace(
        "organizationId: 5d2f8e1a-6b3c-4d7e-9f0a-1b2c3d4e5f60", f"organizationId: {emulator.org_id}"
    )
    config.write_text(text.replace("STAGING_", "PRODUCTION_"))
    for env_name in ("staging", "production"):
        (project / "overlays" / env_name / "organization.yaml").unlink()
    env = environments_env(project, emulator)
    before = len(emulator.requests())
    result = run_cli(["apply", "--env", "staging", "--auto-approve"], env)
    assert result.exit_code == 1
    assert (
        "base/dashboards/ingestion.yaml:8:3: spec.name: dashboard named 'Ingestion' of "
        f"organization {emulator.org_id} is also managed by Dashboard/ingestion in environment "
        "production (reconcile.yaml:20)" in result.stderr
    ), result.output
    assert "exclude Organization/acme from one of them" in result.stderr
    assert (
        "base/pipes/events.yaml:11:3: spec.name: pipe named 'analytics/events'" in result.stderr
    ), result.output
    assert emulator.requests()[before:] == []
    plans = run_cli(["plan", "--all-envs", "-o", "json"], env)
    assert [e["result"] for e in plans.json()["environments"]] == ["failed", "failed"]
    # Named apart (an overlay renames staging's), the organization and the pipe left to
    # production: fine.
    (project / "overlays" / "staging" / "ingestion.yaml").write_text(
        "kind: Dashboard\nmetadata:\n  name: ingestion\nspec:\n  name: Ingestion (staging)\n"
    )
    config.write_text(
        config.read_text().replace(
            "      - overlays/staging\n",
            "      - overlays/staging\n    exclude: [Organization/acme, Pipe/events]\n",
        )
    )
    assert run_cli(["apply", "--env", "staging", "--auto-approve"], env).exit_code == 0
    assert run_cli(["apply", "--env", "production", "--auto-approve"], env).exit_code == 0
    assert _dashboards(emulator, emulator.org_id) == [
        "Ingestion",
        "Ingestion (staging)",
        "Load test",
    ]
