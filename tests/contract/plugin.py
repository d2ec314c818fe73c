"""The contract check of the whole test run, as a pytest plugin.

At start-up each pytest process (each xdist worker too) points ``RECONCILE_EMULATOR_CONTRACT_LOG``
at a file of its own, so every emulator the tests create — in-process apps and ``reconcile
emulator`` processes alike, which inherit the variable — appends its exchanges there. After each
test's teardown the lines that test caused are judged against the contract; a violation fails
that test (as an error at teardown) naming the operation, the part of the exchange, the JSON
path and the rule. Lines written after the last test are judged at session end and fail the
run. Counts are summed over workers and printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator.recording import ENV
from tests.contract.oracle import Contract, Violation

_KEY = "contract"


class Ledger:
    """This process's exchange log: what was read of it so far, and the counts."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.counts: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()

    def take(self) -> list[dict[str, Any]]:
        """The complete lines appended since the last call."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()]

    def judge(self) -> list[Violation]:
        """Judge what was appended since the last call; count it."""
        started = time.perf_counter()
        contract = Contract.load()
        found: list[Violation] = []
        for exchange in self.take():
            self.counts["exchanges"] += 1
            if contract.allowance("path", exchange["path"]) is not None:
                self.counts["allowed"] += 1
                continue
            self.counts["judged"] += 1
            if exchange.get("agent") == "reconcile":
                self.counts["client requests"] += 1
            violations = contract.judge(exchange)
            for text in ("requestText", "responseText"):
                if text in exchange and (
                    text == "responseText" or exchange.get("agent") == "reconcile"
                ):
                    violations.append(
                        Violation(
                            f"{exchange['method']} {exchange['path']}",
                            text[:-4] + " body",
                            "$",
                            "json",
                            "not JSON",
                        )
                    )
            found += violations
        self.counts["violations"] += len(found)
        self.counts["milliseconds"] += round((time.perf_counter() - started) * 1000)
        for violation in found:
            where = re.sub(r"\[\d+\]", "[*]", violation.path)
            self.rules[f"{violation.operation} {violation.part} {where}: {violation.rule}"] += 1
        return found


class Planted:
    """A test's private exchange log, for tests that break the contract on purpose."""

    def __init__(self, path: Path):
        self.path = path

    def violations(self) -> list[Violation]:
        """Every violation the exchanges recorded here commit."""
        if not self.path.exists():
            return []
        contract = Contract.load()
        found: list[Violation] = []
        for line in self.path.read_text().splitlines():
            found += contract.judge(json.loads(line))
        return found


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Planted:
    """Record the emulators this test creates to a log of its own, judged by the test itself.

    For a test that sends what the contract refuses on purpose (to see an error handled): its
    exchanges stay out of the run-wide check, and the test asserts the violation it planted.
    """
    path = tmp_path / "planted-exchanges.jsonl"
    monkeypatch.setenv(ENV, str(path))
    return Planted(path)


def _report(violations: list[Violation]) -> str:
    lines = [f"{len(violations)} violation(s) of the management contract (contract/):"]
    seen: set[str] = set()
    for violation in violations:
        text = str(violation)
        if text not in seen:
            seen.add(text)
            lines.append(f"  {text}")
    return "\n".join(lines)


def pytest_configure(config: pytest.Config) -> None:
    """Point every emulator this process starts at a fresh exchange log."""
    directory = Path(tempfile.mkdtemp(prefix="contract-"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = directory / f"exchanges-{worker}.jsonl"
    os.environ[ENV] = str(path)
    config.stash[_LEDGER] = Ledger(path)


_LEDGER = pytest.StashKey[Ledger]()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this process's exchange log (what it held was judged at session end)."""
    ledger = config.stash.get(_LEDGER, None)
    if ledger is not None:
        shutil.rmtree(ledger.path.parent, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    """After a test's teardown, judge the exchanges it caused; fail it on a violation."""
    result = yield
    violations = item.config.stash[_LEDGER].judge()
    if violations:
        pytest.fail(f"{item.nodeid}: " + _report(violations), pytrace=False)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Judge what arrived after the last test; hand the counts to the controller."""
    ledger = session.config.stash[_LEDGER]
    late = ledger.judge()
    if late:
        session.config.stash[_LATE] = _report(late)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_KEY] = json.dumps({"counts": ledger.counts, "rules": ledger.rules})


_LATE = pytest.StashKey[str]()
_TOTALS = pytest.StashKey[dict[str, Counter[str]]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Add a worker's counts to the run's (xdist controller)."""
    output = getattr(node, "workeroutput", {}).get(_KEY)
    if output is None:
        return
    data = json.loads(output)
    totals = node.config.stash.setdefault(_TOTALS, {"counts": Counter(), "rules": Counter()})
    totals["counts"].update(data["counts"])
    totals["rules"].update(data["rules"])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the run's contract counts and the distinct rules broken."""
    totals = config.stash.get(_TOTALS, None)
    if totals is None:
        ledger = config.stash[_LEDGER]
        totals = {"counts": ledger.counts, "rules": ledger.rules}
    counts = totals["counts"]
    terminalreporter.write_line(
        f"contract: {counts['exchanges']} exchanges recorded, {counts['judged']} judged "
        f"({counts['client requests']} client requests), {counts['allowed']} allow-listed, "
        f"{counts['violations']} violations ({counts['milliseconds'] / 1000:.1f} s judging)"
    )
    for rule, number in totals["rules"].most_common():
        terminalreporter.write_line(f"  {number:5d} × {rule}")
    late = config.stash.get(_LATE, None)
    if late:
        terminalreporter.write_line("after the last test: " + late)
