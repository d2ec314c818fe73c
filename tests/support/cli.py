"""Helpers for integration tests: run the real CLI in-process and write manifests to disk."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from reconciler.cli import main
from reconciler.emulator.seed import scale_ids, scale_service_id
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

SECRET_ENV = {
    "KAFKA_USER": "kafka-user-SECRETVALUE-1",
    "KAFKA_PASSWORD": "kafka-pass-SECRETVALUE-2",
    "STORAGE_KEY_ID": "storage-id-SECRETVALUE-3",
    "STORAGE_SECRET_KEY": "storage-key-SECRETVALUE-4",
    "KINESIS_KEY_ID": "kinesis-id-SECRETVALUE-5",
    "KINESIS_SECRET_KEY": "kinesis-key-SECRETVALUE-6",
    "PG_USER": "pg-user-SECRETVALUE-7",
    "PG_PASSWORD": "pg-pass-SECRETVALUE-8",
    "PAYMENTS_KAFKA_ACCESS_KEY_ID": "payments-id-SECRETVALUE-9",
    "PAYMENTS_KAFKA_SECRET_KEY": "payments-key-SECRETVALUE-10",
    "TELEMETRY_KAFKA_CONNECTION_STRING": "Endpoint=sb://t/;SharedAccessKey=SECRETVALUE-11",
    "AUDIT_KAFKA_CERTIFICATE": "-----BEGIN CERTIFICATE-----SECRETVALUE-12",
    "AUDIT_KAFKA_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----SECRETVALUE-13",
    "MYSQL_USER": "mysql-user-SECRETVALUE-14",
    "MYSQL_PASSWORD": "mysql-pass-SECRETVALUE-15",
    "MONGODB_USER": "mongodb-user-SECRETVALUE-16",
    "MONGODB_PASSWORD": "mongodb-pass-SECRETVALUE-17",
    "BIGQUERY_SERVICE_ACCOUNT": "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0=SECRETVALUE-18",
    "PUBSUB_SERVICE_ACCOUNT": "eyJ0eXBlIjoic2VydmljZV9hY2NvdW50In0=SECRETVALUE-19",
}


@dataclass
class CliResult:
    """What one CLI run printed and returned."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """Both streams, stdout first."""
        return self.stdout + self.stderr

    def json(self) -> Any:
        """Parse stdout as JSON."""
        return json.loads(self.stdout)


# No client budget: a test whose subject is not pacing passes these options so that it does not
# wait out the real 10 requests per 10 s (tests of pacing itself give their own --rate).
UNPACED = ("--rate", "none")

# A dashboard tile as a manifest states it (six wide: one of two columns).
TILE = {
    "name": "rows",
    "x": 0,
    "y": 0,
    "w": 6,
    "h": 3,
    "series": [{"type": "time", "dataSource": "events"}],
}


def run_cli(args: list[str], env: dict[str, str], stdin: str | None = None) -> CliResult:
    """Run ``reconcile ARGS`` in-process through the real entry point (error mapping included)."""
    runner = CliRunner()
    code = 0
    with runner.isolation(input=stdin, env={**SECRET_ENV, **env, "NO_COLOR": "1"}) as (out, err, _):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return CliResult(code, stdout, stderr)


def write_manifest(path: Path, kind: str, name: str, spec: dict[str, Any]) -> Path:
    """Write one manifest document (JSON is YAML) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"apiVersion": "reconcile/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def pipe_spec(
    pipe_id: str = KAFKA_PIPE, service_id: str = ANALYTICS, **fields: Any
) -> dict[str, Any]:
    """Return a Pipe spec with identity and the given managed fields."""
    return {"organizationId": ORG_ID, "serviceId": service_id, "pipeId": pipe_id, **fields}


def postgres_source(*table_mappings: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """Return a pipe ``source`` reading the ``crm`` database of a postgres server, its
    credentials from ``PG_USER``/``PG_PASSWORD``, with the given settings and table mappings."""
    postgres: dict[str, Any] = {
        "host": "db.example.com",
        "port": 5432,
        "database": "crm",
        "credentials": {
            "username": {"fromEnv": "PG_USER"},
            "password": {"fromEnv": "PG_PASSWORD"},
        },
    }
    if settings:
        postgres["settings"] = settings
    return {"postgres": {**postgres, "tableMappings": list(table_mappings)}}


def settle(emulator: Any, timeout: float = 10.0) -> None:
    """Wait until the emulator has answered every request it received (a killed client's too).

    A request sent just before its client was killed is still handled by the server a moment
    later; a run started at once could read an object before that write lands.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = emulator.requests()
        if all(r["status"] is not None or r["fault"] == "drop" for r in log):
            return
        time.sleep(0.05)
    raise AssertionError("the emulator still has requests in flight")


def writes(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the write requests of an emulator request log."""
    return [r for r in log if r["method"] in ("PATCH", "POST", "PUT", "DELETE")]


ENVIRONMENTS_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "environments"


def copy_environments_example(tmp_path: Path, monkeypatch: Any) -> Path:
    """Copy the environments example (with its ``.env``) under ``tmp_path`` and make it the
    current directory (``monkeypatch`` undoes that); return its folder."""
    target = tmp_path / "environments"
    shutil.copytree(ENVIRONMENTS_EXAMPLE, target)
    shutil.copy(target / ".env.example", target / ".env")
    monkeypatch.chdir(target)
    return target


def environments_env(project: Path, emulator: Any = None, **more: str) -> dict[str, str]:
    """Return the variables that run the example ``project`` (against ``emulator`` if given)."""
    env = {"RECONCILE_CONFIG": str(project / "reconcile.yaml"), **more}
    if emulator is not None:
        env["RECONCILE_BASE_URL"] = emulator.url
        env["RECONCILE_DASHBOARDS_URL"] = emulator.url
    return env


def apply_args(paths: list[str | Path], state: Path, *extra: str) -> list[str]:
    """Build `apply --auto-approve` arguments with an explicit state file (unpaced)."""
    return ["apply", *map(str, paths), "--auto-approve", "--state", str(state), *UNPACED, *extra]


def plan_code(emulator: Any, paths: list[str | Path], state: Path) -> tuple[int, str]:
    """Run `plan --detailed-exitcode` (unpaced) and return its exit code and stdout."""
    result = run_cli(
        ["plan", *UNPACED, *map(str, paths), "--detailed-exitcode", "--state", str(state)],
        emulator.env(),
    )
    return result.exit_code, result.stdout


def scale_manifests(root: Path, count: int, services: int, dashboards: int = 5) -> None:
    """Write ``count`` scale-seed pipes changed in settings (every fourth also in its table
    mappings) over ``services`` services, and ``dashboards`` dashboards, under ``root``."""
    for index in range(1, count + 1):
        name, pid = scale_ids(index)
        sid = scale_service_id((index - 1) % services + 1)
        fields: dict[str, Any] = {
            "settings": {"engine_max_threads": 7, "engine_max_insert_threads": 3}
        }
        if (index - 1) % 4 == 3:  # postgres: also replace the table mapping set (add/remove)
            fields["source"] = {
                "postgres": {
                    "tableMappings": [
                        {
                            "sourceSchemaName": "public",
                            "sourceTable": f"new_{index}",
                            "targetTable": f"new_{index}",
                        }
                    ]
                }
            }
        write_manifest(root / f"{name}.yaml", "Pipe", name, pipe_spec(pid, sid, **fields))
    for d in range(dashboards):
        write_manifest(
            root / f"dash-{d}.yaml",
            "Dashboard",
            f"dash-{d}",
            {"name": f"Dashboard {d}", "tiles": [TILE]},
        )
