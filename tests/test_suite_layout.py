"""The suite's own layout: test modules are specifications that never import one another, and
everything they share lives in the ``tests/support/`` package.

``layout_offences(tests_dir)`` lists each breach as ``path:line: what``: a module importing a
test module (``tests.test_x``, ``from . import test_x``, ``import test_x``), a file of the suite's
top level that is neither ``conftest.py``, ``__init__.py`` nor a test module (a helper kept
beside the tests), a ``*_helpers.py`` module anywhere, and a test module inside ``support/``.
``tests/contract/`` is the contract oracle's own package (``make contract-check`` runs it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PACKAGES = {"support", "contract"}
TOP_LEVEL = {"__init__.py", "conftest.py"}


def imported_modules(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an ``import`` or ``from ... import`` names."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            # `from tests import test_x` and `from . import test_x` name modules in their list.
            sep = "" if base.endswith(".") else "."
            found += [(node.lineno, f"{base}{sep}{alias.name}") for alias in node.names]
    return found


def is_test_module(name: str) -> bool:
    """Whether a dotted import names a test module (its last part is ``test_*``)."""
    last = name.rstrip(".").rsplit(".", 1)[-1]
    return last.startswith("test_")


def layout_offences(tests_dir: Path) -> list[str]:
    """Every breach of the layout under ``tests_dir``, one ``path:line: what`` each."""
    offences: list[str] = []
    for path in sorted(tests_dir.rglob("*.py")):
        relative = path.relative_to(tests_dir)
        if relative.parts[0] in {".venv", "__pycache__"}:
            continue
        where = relative.as_posix()
        if path.name.endswith("_helpers.py"):
            offences.append(f"{where}:1: a helpers module outside tests/support/")
        if len(relative.parts) == 1 and path.name not in TOP_LEVEL:
            if not path.name.startswith("test_"):
                offences.append(
                    f"{where}:1: a shared module beside the tests (move it to support/)"
                )
        elif len(relative.parts) > 1 and relative.parts[0] not in PACKAGES:
            offences.append(f"{where}:1: a package other than support/ and contract/")
        if relative.parts[0] == "support" and path.name.startswith("test_"):
            offences.append(f"{where}:1: a test module inside support/")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in imported_modules(tree):
            if is_test_module(name):
                offences.append(f"{where}:{line}: imports the test module {name}")
    return offences


def test_the_suite_keeps_its_layout() -> None:
    assert layout_offences(TESTS) == []


def write(root: Path, relative: str, text: str = "") -> None:
    """Write one file of a planted tests tree."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


A = "test_a"  # a test module's name (spelled apart: a grep for such imports finds none here)


@pytest.mark.parametrize(
    ("relative", "text", "offence"),
    [
        (
            "test_b.py",
            f"from tests.{A} import helper\n",
            "test_b.py:1: imports the test module tests.test_a",
        ),
        (
            "test_b.py",
            f"\nimport tests.{A}\n",
            "test_b.py:2: imports the test module tests.test_a",
        ),
        (
            "test_b.py",
            "from tests import test_a\n",
            "test_b.py:1: imports the test module tests.test_a",
        ),
        ("test_b.py", "from . import test_a\n", "test_b.py:1: imports the test module .test_a"),
        ("test_b.py", "from .test_a import x\n", "test_b.py:1: imports the test module .test_a"),
        ("support/cli.py", "import test_a\n", "support/cli.py:1: imports the test module test_a"),
        ("cli_helpers.py", "", "cli_helpers.py:1: a helpers module outside tests/support/"),
        (
            "seed_ids.py",
            "",
            "seed_ids.py:1: a shared module beside the tests (move it to support/)",
        ),
        ("support/test_x.py", "", "support/test_x.py:1: a test module inside support/"),
        ("shared/clock.py", "", "shared/clock.py:1: a package other than support/ and contract/"),
    ],
)
def test_each_breach_is_named_at_its_file_and_line(
    tmp_path: Path, relative: str, text: str, offence: str
) -> None:
    write(tmp_path, "conftest.py", "from tests.support.cli import run_cli\n")
    write(tmp_path, "test_a.py", "from tests.support.seed_ids import ORG_ID\n")
    write(tmp_path, "support/__init__.py")
    assert layout_offences(tmp_path) == []
    write(tmp_path, relative, text)
    assert offence in layout_offences(tmp_path)
