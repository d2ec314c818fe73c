"""The read-only commands run in-process against the emulator (click's CliRunner).

``invoke(emulator, *args)`` runs ``reconcile ARGS`` and returns its exit code, output and error
text (errors mapped as the entry point maps them); ``api_paths`` lists the paths the emulator
saw; ``export_everything`` exports both seeded services, the organization and the dashboards.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from reconciler.cli import cli
from reconciler.model.errors import ReconcileError
from tests.support.emulator import Emulator
from tests.support.seed_ids import STAGING

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


class Outcome:
    """Exit code and output of one in-process CLI run (errors mapped as ``reconciler.cli.main`` does)."""

    def __init__(self, code: int, output: str, error: str) -> None:
        self.code = code
        self.output = output
        self.error = error


def invoke(emulator: Emulator, *args: str, env: dict[str, str] | None = None) -> Outcome:
    """Run ``reconcile ARGS`` with click's CliRunner against the emulator."""
    result = CliRunner().invoke(
        cli, list(args), env={**emulator.env(), **(env or {})}, standalone_mode=False
    )
    if isinstance(result.exception, ReconcileError):
        return Outcome(1, result.output, str(result.exception))
    if result.exception is not None:
        raise result.exception
    code = result.return_value if isinstance(result.return_value, int) else 0
    return Outcome(code, result.output, "")


def api_paths(emulator: Emulator) -> list[str]:
    """Return the paths of the management/dashboards requests the emulator saw."""
    return [str(r.get("path")) for r in emulator.requests()]


def export_everything(emulator: Emulator, out: Path, *extra: str) -> None:
    """Export both seeded services' pipes, the organization and the dashboards into ``out``."""
    first = invoke(
        emulator, "export", "--service", "analytics", "--organization-manifest", "--dashboards",
        "--dir", str(out), *extra,
    )  # fmt: skip
    assert first.code == 0, first.error
    second = invoke(emulator, "export", "--service", STAGING, "--dir", str(out), *extra)
    assert second.code == 0, second.error
