"""`--metrics-file`: Prometheus text written atomically by plan, apply and check backups."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.cli import SECRET_ENV, UNPACED, run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent


def samples(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Parse a metrics file into {(name, sorted labels): value}."""
    out = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return found[(name, tuple(sorted(labels.items())))]


def test_plan_metrics_count_outcomes_drift_requests_and_429s_without_secrets(
    emulator: Emulator, tmp_path: Path
) -> None:
    emulator.configure(rateLimit="3/1")
    metrics = tmp_path / "textfile" / "reconcile.prom"
    args = ["plan", str(EXAMPLES), "--state", str(tmp_path / "s.json"), "--rate", "none"]
    result = run_cli([*args, "--metrics-file", str(metrics)], emulator.env())
    assert result.exit_code == 0, result.output
    found = samples(metrics)
    plan = {"command": "plan"}
    assert value(found, "reconcile_run_success", **plan) == 1
    # A dashboard and the example pipe without pipeId are created.
    assert value(found, "reconcile_resources", outcome="create", **plan) == 2
    assert value(found, "reconcile_resources", outcome="update", **plan) == 8
    assert value(found, "reconcile_drifted_resources", **plan) == 10
    log = emulator.requests()
    management = [r for r in log if str(r["path"]).startswith("/v1/")]
    throttled = [r for r in management if r["status"] == 429]
    assert throttled, "the emulator's rate limit should have answered 429"
    assert value(found, "reconcile_requests", interface="management", **plan) == len(management)
    assert value(found, "reconcile_throttled_requests", interface="management", **plan) == len(
        throttled
    )
    assert value(found, "reconcile_last_success_timestamp_seconds", **plan) > 0
    text = metrics.read_text(encoding="utf-8")
    assert all(secret not in text for secret in [*SECRET_ENV.values(), emulator.key_secret])
    assert sorted(p.name for p in metrics.parent.iterdir()) == ["reconcile.prom"]  # no temp left


def test_a_failed_run_keeps_the_last_success_timestamp_and_says_it_failed(
    emulator: Emulator, tmp_path: Path
) -> None:
    metrics = tmp_path / "reconcile.prom"
    args = ["apply", str(EXAMPLES), "--auto-approve", "--state", str(tmp_path / "s.json"), *UNPACED]
    assert run_cli([*args, "--metrics-file", str(metrics)], emulator.env()).exit_code == 0
    first = samples(metrics)
    apply = {"command": "apply"}
    assert value(first, "reconcile_resources", outcome="applied", **apply) == 10
    failed = run_cli(
        [*args, "--metrics-file", str(metrics)], {**emulator.env(), "RECONCILE_KEY_SECRET": "bad"}
    )
    assert failed.exit_code == 1
    second = samples(metrics)
    assert value(second, "reconcile_run_success", **apply) == 0
    last = "reconcile_last_success_timestamp_seconds"
    assert value(second, last, **apply) == value(first, last, **apply)
    assert value(second, "reconcile_run_timestamp_seconds", **apply) > value(first, last, **apply)


def test_check_backups_metrics_count_fresh_and_stale_services(
    emulator: Emulator, tmp_path: Path
) -> None:
    metrics = tmp_path / "backups.prom"
    result = run_cli(
        ["check", "backups", "--max-age", "26h", "--metrics-file", str(metrics)], emulator.env()
    )
    assert (
        result.exit_code == 2
    )  # stale (a finding): the seed has one service without a recent backup
    found = samples(metrics)
    check = {"command": "check_backups"}
    assert value(found, "reconcile_resources", outcome="stale", **check) == 1
    assert value(found, "reconcile_resources", outcome="fresh", **check) == 2
    # A finding is a successful run: the check ran and answered (issue: the alert never fired).
    assert value(found, "reconcile_run_success", **check) == 1
