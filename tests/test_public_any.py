"""The core's public signatures say what JSON they carry: at most five mention `Any`, each with a reason.

A public function is a module-level function or a method of a module-level class, neither named with a
leading underscore, in the core packages (model, load, client, state, plan, apply, inventory,
settings, watch and metrics.py: not the CLI or the emulator). Its signature
"mentions Any" when a parameter or return annotation names ``Any`` — directly, or through a module-level
alias of the same module that does (``Check = Callable[[Any], bool]``). A public dataclass's
fields count too (they are its constructor's parameters). Each allowed one carries a
``# Any: <why>`` comment on the line before the ``def`` (or inside its signature) or the field.

Run as a script (``python tests/test_public_any.py``) to print the count per package and every offender.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "reconciler"
CORE = (
    *("model", "load", "client", "state", "plan", "apply", "inventory", "settings"),
    *("watch", "metrics.py"),
)
ALLOWED = 5
_REASON = re.compile(r"#\s*Any:\s*\S")


@dataclass(frozen=True)
class Offender:
    """One public function whose signature mentions Any."""

    path: str
    line: int
    name: str
    reasoned: bool


def _names_any(node: ast.AST | None, aliases: set[str]) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (sub.id == "Any" or sub.id in aliases):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            words = set(re.findall(r"\w+", sub.value))
            if "Any" in words or words & aliases:
                return True
    return False


def _any_aliases(tree: ast.Module) -> set[str]:
    """Module-level names bound to a type expression that mentions Any (plain or TypeAlias-annotated)."""
    aliases: set[str] = set()
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            target, value = stmt.targets[0].id, stmt.value
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.value is not None
        ):
            if not _names_any(stmt.annotation, set()) and not (
                isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == "TypeAlias"
            ):
                continue
            target, value = stmt.target.id, stmt.value
        else:
            continue
        if isinstance(
            value, (ast.Subscript, ast.BinOp, ast.Name, ast.Attribute, ast.Constant)
        ) and _names_any(value, set()):
            aliases.add(target)
    return aliases


def _signature_mentions_any(fn: ast.FunctionDef | ast.AsyncFunctionDef, aliases: set[str]) -> bool:
    a = fn.args
    params = [
        *a.posonlyargs,
        *a.args,
        *a.kwonlyargs,
        *(p for p in (a.vararg, a.kwarg) if p is not None),
    ]
    return any(_names_any(p.annotation, aliases) for p in params) or _names_any(fn.returns, aliases)


def _reasoned(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)]) - 1
    last = fn.body[0].lineno - 1
    return any(_REASON.search(lines[i - 1]) for i in range(max(first, 1), last + 1))


def _public_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith(
            "_"
        ):
            out.append(stmt)
        elif isinstance(stmt, ast.ClassDef) and not stmt.name.startswith("_"):
            out.extend(
                m
                for m in stmt.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                and not m.name.startswith("_")
            )
    return out


def _dataclass_fields_with_any(
    tree: ast.Module, aliases: set[str]
) -> list[tuple[str, ast.AnnAssign]]:
    """Fields of public dataclasses annotated with Any: parameters of their generated ``__init__``."""
    out: list[tuple[str, ast.AnnAssign]] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef) or stmt.name.startswith("_"):
            continue
        if not any("dataclass" in ast.unparse(d) for d in stmt.decorator_list):
            continue
        for member in stmt.body:
            if (
                isinstance(member, ast.AnnAssign)
                and isinstance(member.target, ast.Name)
                and "ClassVar" not in ast.unparse(member.annotation)
                and _names_any(member.annotation, aliases)
            ):
                out.append((f"{stmt.name}.{member.target.id}", member))
    return out


def offenders() -> list[Offender]:
    """Every public function of the core whose signature mentions Any (a dataclass's fields
    included: they are its constructor's parameters)."""
    found: list[Offender] = []
    for part in CORE:
        files = [ROOT / part] if part.endswith(".py") else sorted((ROOT / part).rglob("*.py"))
        for file in files:
            text = file.read_text(encoding="utf-8")
            tree, lines = ast.parse(text), text.splitlines()
            aliases = _any_aliases(tree)
            rel = str(file.relative_to(ROOT.parent))
            for fn in _public_functions(tree):
                if _signature_mentions_any(fn, aliases):
                    found.append(Offender(rel, fn.lineno, fn.name, _reasoned(fn, lines)))
            for name, member in _dataclass_fields_with_any(tree, aliases):
                said = _REASON.search(lines[member.lineno - 2]) is not None
                found.append(Offender(rel, member.lineno, name, said))
    return found


def test_at_most_five_public_core_functions_mention_any() -> None:
    found = offenders()
    assert len(found) <= ALLOWED, "\n".join(f"{o.path}:{o.line} {o.name}" for o in found)


def test_each_remaining_any_in_a_public_signature_says_why() -> None:
    unexplained = [f"{o.path}:{o.line} {o.name}" for o in offenders() if not o.reasoned]
    assert unexplained == []


def test_the_counter_sees_any_directly_through_an_alias_and_in_a_string() -> None:
    tree = ast.parse(
        "from typing import Any\n"
        "Check = Callable[[Any], bool]\n"
        "def a(x: Any) -> None: ...\n"
        "def b(x: Check) -> None: ...\n"
        "def c() -> 'dict[str, Any]': ...\n"
        "def d(x: int) -> int: ...\n"
        "def _e(x: Any) -> None: ...\n"
        "class K:\n"
        "    def m(self, **kw: Any) -> None: ...\n"
    )
    aliases = _any_aliases(tree)
    hits = [f.name for f in _public_functions(tree) if _signature_mentions_any(f, aliases)]
    assert hits == ["a", "b", "c", "m"]


def test_the_counter_sees_a_public_dataclass_field_typed_any_but_not_a_class_variable() -> None:
    tree = ast.parse(
        "from typing import Any\n"
        "@dataclass(frozen=True)\n"
        "class D:\n"
        "    a: Any\n"
        "    b: dict[str, Any] = {}\n"
        "    c: int = 0\n"
        "    d: ClassVar[Any] = None\n"
        "class Plain:\n"
        "    e: Any\n"
        "@dataclass\n"
        "class _Private:\n"
        "    f: Any\n"
    )
    names = [name for name, _ in _dataclass_fields_with_any(tree, set())]
    assert names == ["D.a", "D.b"]


if __name__ == "__main__":
    found = offenders()
    per_package = Counter(o.path.split("/")[1] for o in found)
    for o in found:
        print(f"{o.path}:{o.line} {o.name}{'' if o.reasoned else '  (no # Any: reason)'}")
    print(", ".join(f"{pkg}: {n}" for pkg, n in sorted(per_package.items())))
    print(f"total: {len(found)} (allowed {ALLOWED})")
    sys.exit(0 if len(found) <= ALLOWED and all(o.reasoned for o in found) else 1)
