"""Session-wide fixtures: a real emulator on a loopback port, built releases, and plugins.

``emulator_server`` (session) starts ``python -m reconciler emulator --port 0`` once (see
``tests.support.emulator``); ``emulator`` (function) resets the seed, the log and the
configuration before each test and returns the same ``Emulator`` handle. Every helper shared
by test modules lives in ``tests/support/``; test modules never import one another.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dist import Dist, built_distribution, installed_venv, shared_root
from tests.support.emulator import DEFAULT_CONFIG, Emulator, start_emulator, stop_emulator

# Session fixtures for the shared-state backends (a real PostgreSQL cluster and moto_server),
# the in-process emulator on a hand-moved clock, and the contract check of every exchange with
# an emulator (tests/contract/plugin.py).
pytest_plugins = [
    "tests.support.state_servers",
    "tests.support.emulator_app",
    "tests.contract.plugin",
]


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """Name the seed of this run's test order (pytest-randomly), also under ``-q``: it replays it."""
    seed = config.getoption("randomly_seed", default=None)
    if isinstance(seed, int):
        order = "shuffled" if config.getoption("randomly_reorganize") else "as written"
        terminalreporter.write_line(
            f"test order: {order}; replay with -p randomly --randomly-seed={seed}"
        )


@pytest.fixture(autouse=True)
def _no_project_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the repository's own reconcile.yaml (and a developer's .env) out of every test.

    Tests of the project file itself remove this variable and work in a temporary directory.
    """
    monkeypatch.setenv("RECONCILE_CONFIG", os.devnull)


@pytest.fixture(scope="session")
def emulator_server() -> Iterator[Emulator]:
    """One real emulator on a loopback port for the whole test session."""
    emulator = start_emulator()
    try:
        yield emulator
    finally:
        stop_emulator(emulator)


@pytest.fixture
def emulator(emulator_server: Emulator) -> Emulator:
    """The shared emulator, with seed, log and configuration reset before the test."""
    emulator_server.configure(**DEFAULT_CONFIG)
    emulator_server.reset(seedPipes=0, services=3)
    return emulator_server


@pytest.fixture(scope="session")
def distribution(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and wheel ``python -m build`` makes of this tree (built once per session)."""
    return built_distribution(shared_root(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="session")
def installed_bin(tmp_path_factory: pytest.TempPathFactory, distribution: Dist) -> Path:
    """The bin directory of a fresh venv outside the checkout, the release installed by name."""
    return installed_venv(shared_root(tmp_path_factory.getbasetemp()), distribution)
