"""The code's shape: functions fit on a screen, modules hold one job, every module states its
public names, and the public surface stays within its bound.

A function over 80 lines (the emulator aside: a server implementation, not the library) is
split by job, and so is a module over 400 lines (the emulator included). Every module of the
package has an ``__all__`` (``tools/public_api.py --write`` writes them: what a module offers
outside its own stage, its re-exports, and the root package's documented API). The distinct
names over all ``__all__``s, counted at the module that defines each, stay at most 450, and so
does the interface between stages that the tool computes from the imports themselves.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reconciler"
EMULATOR = PACKAGE / "emulator"
MAX_FUNCTION_LINES = 80
MAX_INTERFACE_NAMES = 450
MAX_PUBLIC_NAMES = 450
MAX_MODULE_LINES = 400


def _public_api() -> ModuleType:
    """Import ``tools/public_api.py`` (a script, not a package) by its path."""
    path = ROOT / "tools" / "public_api.py"
    spec = importlib.util.spec_from_file_location("public_api", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("public_api", module)
    spec.loader.exec_module(module)
    return module


def _long_functions(path: Path, base: Path = ROOT) -> list[str]:
    """Name each function of ``path`` longer than 80 lines: ``file:line name (N lines)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                where = path.relative_to(base)
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_outside_the_emulator_is_longer_than_80_lines() -> None:
    long = [
        entry
        for path in sorted(PACKAGE.rglob("*.py"))
        if EMULATOR not in path.parents
        for entry in _long_functions(path)
    ]
    assert long == []


def test_the_length_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    source = tmp_path / "long.py"
    source.write_text(f"def long() -> None:\n{body}\n\ndef short() -> None:\n    pass\n")
    assert _long_functions(source, tmp_path) == [f"long.py:1 long ({MAX_FUNCTION_LINES + 1} lines)"]


def _long_modules(root: Path) -> list[str]:
    """Name each module under ``root`` longer than 400 lines: ``path (N lines)``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root).as_posix()} ({lines} lines)")
    return found


def test_no_module_of_the_package_is_longer_than_400_lines() -> None:
    # The emulator too: a module past 400 lines holds more than one job, server or not.
    assert _long_modules(PACKAGE) == []


def test_the_module_length_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert _long_modules(tmp_path) == [f"pkg/long.py ({MAX_MODULE_LINES + 1} lines)"]


def test_every_module_of_the_package_has_all() -> None:
    api = _public_api()
    modules = api.load_modules()
    assert [name for name, module in modules.items() if module.all_node is None] == []


def test_the_interface_between_stages_is_at_most_450_names() -> None:
    api = _public_api()
    modules = api.load_modules()
    assert len(api.interface(modules, api.uses(modules))) <= MAX_INTERFACE_NAMES


def test_the_public_names_in_all_are_at_most_450() -> None:
    api = _public_api()
    modules = api.load_modules()
    total, _emulator = api.count(api.declared_listing(modules), modules)
    assert total <= MAX_PUBLIC_NAMES


def test_the_interface_counts_imports_across_stages_and_the_documented_api() -> None:
    api = _public_api()
    modules = api.load_modules()
    use = api.Use
    found = {
        use("reconciler.plan.compute", "reconciler.model.errors", "suggest"),  # across stages
        use("reconciler.plan.compute", "reconciler.plan.diff", "canonical"),  # inside a stage
        use("tests.test_diff", "reconciler.plan.diff", "mapping_key"),  # a test only
    }
    pairs = api.interface(modules, found)
    assert ("reconciler.model.errors", "suggest") in pairs
    assert ("reconciler.plan.diff", "canonical") not in pairs
    assert ("reconciler.plan.diff", "mapping_key") not in pairs
    assert ("reconciler.model.errors", "ReconcileError") in pairs  # the documented API


def test_public_names_are_counted_once_at_their_defining_module() -> None:
    # ``reconciler``'s ``__all__`` re-exports names defined in its stages: counting the
    # listings of the package and of the defining modules together counts each once.
    api = _public_api()
    modules = api.load_modules()
    listing = {
        "reconciler": ["ReconcileError"],
        "reconciler.model.errors": ["ReconcileError"],
    }
    assert api.count(listing, modules) == (1, 0)


def test_all_is_sorted_as_ruff_sorts_it() -> None:
    api = _public_api()
    names = ["render", "Plan", "MISSING", "item10", "item2", "Op", "AUTO_APPROVE"]
    assert api.sort_names(names) == [
        "AUTO_APPROVE",
        "MISSING",
        "Op",
        "Plan",
        "item2",
        "item10",
        "render",
    ]
