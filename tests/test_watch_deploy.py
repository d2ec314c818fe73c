"""The deployment files shown by the docs (deploy/): the systemd unit and the
Kubernetes Deployment parse, run ``reconcile watch`` with flags that exist and values the
command accepts, and wire what the docs promise (2 replicas, PostgreSQL state, probes on
/healthz and /readyz on the --listen port, a Prometheus scrape annotation); the Deployment's
pod installs this release by name and runs it, as checked by running its two commands here."""

from __future__ import annotations

import configparser
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from ruamel.yaml import YAML

from reconciler.cli import cli
from tests.support.dist import DISTRIBUTION, Dist, project_version, run

REPO = Path(__file__).resolve().parent.parent


def _parsed(args: list[str]) -> dict[str, Any]:
    """Parse ``watch ARGS`` exactly as the command line would (unknown flag or bad value: error)."""
    command = cli.get_command(click.Context(cli), "watch")
    assert command is not None
    flags = {opt for param in command.params for opt in param.opts}
    unknown = [a.split("=")[0] for a in args if a.startswith("--") and a.split("=")[0] not in flags]
    assert unknown == [], f"flags watch does not have: {unknown}"
    with click.Context(cli) as parent:
        ctx = command.make_context("watch", list(args), parent=parent)
    return dict(ctx.params)


def test_the_systemd_unit_parses_and_runs_watch_with_existing_flags() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(REPO / "deploy" / "reconcile-watch.service", encoding="utf-8")
    assert set(unit.sections()) == {"Unit", "Service", "Install"}
    service = unit["Service"]
    program, command, *args = shlex.split(service["ExecStart"])
    assert Path(program).name == "reconcile" and command == "watch"
    params = _parsed(args)
    assert params["mode"] == "correct" and params["interval"] == 300.0
    assert params["listen"].startswith("127.0.0.1:")  # loopback on a single machine
    assert service["KillSignal"] == "SIGTERM" and "kill -HUP" in service["ExecReload"]


def test_the_kubernetes_deployment_runs_two_replicas_on_postgresql_with_probes_and_scraping() -> (
    None
):
    documents = list(
        YAML(typ="safe").load_all((REPO / "deploy" / "kubernetes" / "watch.yaml").read_text())
    )
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    command, *args = container["args"]
    assert command == "watch"
    params = _parsed(args)
    assert params["state_path"].startswith("postgresql://")
    assert ":" not in params["state_path"].split("//", 1)[1].split("@")[0]  # no password inline
    port = int(params["listen"].rsplit(":", 1)[1])
    assert container["ports"][0]["containerPort"] == port
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == port
    assert annotations["prometheus.io/path"] == "/metrics"


def test_the_docs_show_the_deployment_files_exactly_as_they_are_in_the_repository() -> None:
    import re

    from tests.support.docs import all_pages

    text = "".join(all_pages().values())
    shown = dict(re.findall(r"<!-- file: (\S+) -->\n```\w+\n(.*?)```", text, re.DOTALL))
    assert set(shown) == {"deploy/reconcile-watch.service", "deploy/kubernetes/watch.yaml"}
    for path, text in shown.items():
        # Included when the site is built (--8<--), or shown as a copy that must be exact.
        assert text in (f'--8<-- "{path}"\n', (REPO / path).read_text(encoding="utf-8")), path


def test_the_kubernetes_deployment_installs_this_release_by_name_into_a_stock_python_image(
    tmp_path: Path, distribution: Dist
) -> None:
    deployment = next(
        d
        for d in YAML(typ="safe").load_all(
            (REPO / "deploy" / "kubernetes" / "watch.yaml").read_text()
        )
        if d["kind"] == "Deployment"
    )
    pod = deployment["spec"]["template"]["spec"]
    (install,) = pod["initContainers"]
    (watch,) = pod["containers"]
    assert install["image"] == watch["image"] and watch["image"].startswith(
        "docker.io/library/python:"
    )  # a published image: none of this project's own, which nothing would build
    assert install["command"][-1] == f"{DISTRIBUTION}=={project_version()}"
    assert pod["securityContext"]["runAsNonRoot"] is True
    # The pod's two commands, run here as the pod runs them (the target a fresh directory, the
    # release found by name in this session's build).
    target = tmp_path / "opt-reconcile"
    command = [
        str(target) if arg == install["volumeMounts"][0]["mountPath"] else arg
        for arg in install["command"]
    ]
    run([sys.executable, *command[1:]], cwd=tmp_path, env=distribution.pip_env())
    env = {e["name"]: e.get("value") for e in watch["env"]}
    assert env["PYTHONPATH"] == install["volumeMounts"][0]["mountPath"]
    # -S: none of this checkout's site-packages (its editable install): the target alone.
    shown = run(
        [sys.executable, "-S", *watch["command"][1:], "version"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
    )
    assert shown.strip() == f"reconcile {project_version()}"
    helped = run(
        [sys.executable, "-S", *watch["command"][1:], watch["args"][0], "--help"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
    )
    assert "--lease" in helped
