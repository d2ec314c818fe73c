"""The package's public surface: what each module of ``reconciler`` offers outside its stage.

A module's ``__all__`` lists the names another stage (package) of ``reconciler`` imports from
it, the root package's documented API, the console script of pyproject.toml, and what the
module re-exports from another module (``mypy --strict`` and ruff need a re-export declared);
a package's ``__init__`` lists everything it imports from its modules. Names used only
inside their own stage, or only by tests, benchmarks and the docs' scripts, are that stage's
business and stay out. A module nobody imports from lists the names its docstring calls its
interface, else its main entry point. A name a package re-exports is counted at the module
that defines it.

    python tools/public_api.py            # the counts, and the modules without __all__
    python tools/public_api.py --show reconciler.model
    python tools/public_api.py --write    # write/update every __all__

The public-name count is the number of distinct (defining module, name) pairs over all
``__all__``s, the emulator's counted apart; the interface between stages is the part of it
that the documented API and the stages' imports of one another use. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "reconciler"
# Where the modules that import the package's names live.
IMPORTERS = ("reconciler", "tests", "bench", "docs", "tools")
EMULATOR = "reconciler.emulator"
# Names a module with no importer may call its entry point, in order of preference.
ENTRY_POINTS = ("main", "entry", "cli", "app", "run")
_DOTTED = re.compile(r"\b(reconciler(?:\.[A-Za-z_]\w*)+)(?::([A-Za-z_]\w*))?")
_BACKTICKED = re.compile(r"``([A-Za-z_]\w*)")
LINE_LENGTH = 100


@dataclass
class Module:
    """One module of the package: where it is and what it binds at its top level."""

    name: str
    path: Path
    tree: ast.Module
    # name -> (module, name) it was imported from; None for what the module defines itself.
    bindings: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)  # names bound to modules (import x as y)
    all_node: ast.stmt | None = None
    declared: list[str] | None = None  # the existing __all__, if a literal list of strings

    @property
    def is_package(self) -> bool:
        """Tell whether this is a package's ``__init__``."""
        return self.path.name == "__init__.py"

    @property
    def docstring(self) -> str:
        """Return the module docstring (empty when none)."""
        return ast.get_docstring(self.tree) or ""


def module_name(path: Path) -> str:
    """Return the dotted name of a file under the repository root."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(current: str, is_package: bool, level: int, target: str | None) -> str:
    """Return the absolute module a relative import names."""
    if level == 0:
        return target or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([target] if target else [])])


def _top_level(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Yield the statements run at import: the body, and the bodies of its if/try blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)
            for handler in node.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(node.orelse)
            yield from _top_level(node.finalbody)


def _targets(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _targets(element)


def load_modules() -> dict[str, Module]:
    """Parse every module of the package and record its top-level bindings."""
    modules: dict[str, Module] = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        name = module_name(path)
        modules[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    bound = {name: _bound_names(m.tree) for name, m in modules.items()}
    for module in modules.values():
        _bind(module, modules, bound)
    return modules


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name a module's top level binds, of any kind (a first pass, for ``_bind``)."""
    names: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n for t in targets for n in _targets(t))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
    return names


def _is_submodule(
    modules: dict[str, Module], source: str, name: str, bound: dict[str, set[str]]
) -> bool:
    """Tell whether ``from source import name`` imports a module (a package may bind a
    function of its submodule's name, which then wins)."""
    return f"{source}.{name}" in modules and name not in bound.get(source, set())


def _bind(module: Module, modules: dict[str, Module], bound: dict[str, set[str]]) -> None:
    for node in _top_level(module.tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            module.bindings[node.name] = None
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _targets(target):
                    if name == "__all__":
                        module.all_node = node
                        module.declared = _literal_names(node.value)
                    else:
                        module.bindings.setdefault(name, None)
        elif type(node).__name__ == "TypeAlias":  # ``type X = ...`` (Python 3.12)
            module.bindings[node.name.id] = None  # type: ignore[attr-defined]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module.modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_relative(module.name, module.is_package, node.level, node.module)
            for alias in node.names:
                local = alias.asname or alias.name
                if _is_submodule(modules, source, alias.name, bound):
                    module.modules.add(local)
                elif source.startswith(PACKAGE) and alias.name != "*":
                    module.bindings[local] = (source, alias.name)


def _literal_names(value: ast.expr | None) -> list[str] | None:
    """Return the strings of a literal list or tuple (None for anything else)."""
    if not isinstance(value, ast.List | ast.Tuple):
        return None
    names = [e.value for e in value.elts if isinstance(e, ast.Constant)]
    strings = [n for n in names if isinstance(n, str)]
    return strings if len(strings) == len(value.elts) else None


def defining(modules: dict[str, Module], module: str, name: str) -> tuple[str, str] | None:
    """Follow re-exports to the module that defines ``module.name`` (None: not a binding)."""
    seen: set[tuple[str, str]] = set()
    while (module, name) not in seen:
        seen.add((module, name))
        found = modules.get(module)
        lazy = found is not None and found.is_package and "__getattr__" in found.bindings
        if lazy and found is not None and name not in found.bindings:
            # PEP 562: bound on first use by the package's __getattr__ (ruff's F822 accepts
            # such a name in a package's __all__ only).
            return (module, name)
        if found is None or name not in found.bindings:
            return None
        origin = found.bindings[name]
        if origin is None:
            return (module, name)
        module, name = origin
    return None


@dataclass(frozen=True)
class Use:
    """One import of a package name by another module: through which module, of which name."""

    importer: str
    via: str
    name: str


def importer_files() -> Iterator[Path]:
    """Yield every Python file of the repository that may import the package's names."""
    for top in IMPORTERS:
        folder = ROOT / top
        if folder.is_dir():
            yield from sorted(p for p in folder.rglob("*.py") if ".venv" not in p.parts)


def uses(modules: dict[str, Module]) -> set[Use]:
    """Return every (importer, module, name) use of a package name in the repository."""
    found: set[Use] = set()
    for path in importer_files():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        importer = module_name(path)
        is_package = path.name == "__init__.py"
        found.update(_uses_in(tree, importer, is_package, modules))
    found.update(_entry_point_uses(modules))
    return {u for u in found if u.importer != u.via}


def _uses_in(
    tree: ast.Module, importer: str, is_package: bool, modules: dict[str, Module]
) -> Iterator[Use]:
    aliases: dict[str, str] = {}  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_relative(importer, is_package, node.level, node.module)
            if not source.startswith(PACKAGE):
                continue
            for alias in node.names:
                package = modules.get(source)
                if f"{source}.{alias.name}" in modules and (
                    package is None or alias.name not in package.bindings
                ):
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif alias.name == "*":
                    yield from (Use(importer, source, n) for n in _star(modules, source))
                else:
                    yield Use(importer, source, alias.name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield from _dotted_uses(node.value, importer, modules)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain and chain[0] in aliases:
                yield from _attribute_use([aliases[chain[0]], *chain[1:]], importer, modules)


def _star(modules: dict[str, Module], source: str) -> list[str]:
    module = modules.get(source)
    if module is None:
        return []
    return module.declared or [n for n in module.bindings if not n.startswith("_")]


def _chain(node: ast.Attribute) -> list[str] | None:
    """Return ``a.b.c`` as ``["a", "b", "c"]`` (None unless rooted at a plain name)."""
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    parts.append(current.id)
    return parts[::-1]


def _attribute_use(chain: list[str], importer: str, modules: dict[str, Module]) -> Iterator[Use]:
    """Resolve ``module.sub.name`` (the first part a module) to a use of ``name``."""
    dotted = chain[0].split(".")
    rest = chain[1:]
    while rest and ".".join([*dotted, rest[0]]) in modules:
        dotted.append(rest.pop(0))
    module = ".".join(dotted)
    if rest and module in modules:
        yield Use(importer, module, rest[0])


def _dotted_uses(text: str, importer: str, modules: dict[str, Module]) -> Iterator[Use]:
    """Uses named in strings: ``"reconciler.cli:entry"``, ``"reconciler.plan.diff.same"``."""
    for match in _DOTTED.finditer(text):
        dotted, attribute = match.group(1), match.group(2)
        if attribute is not None and dotted in modules:
            yield Use(importer, dotted, attribute)
        elif attribute is None and dotted not in modules:
            module, _, name = dotted.rpartition(".")
            if module in modules:
                yield Use(importer, module, name)


def _entry_point_uses(modules: dict[str, Module]) -> Iterator[Use]:
    """The console scripts of pyproject.toml import their functions too."""
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists():
        return
    scripts = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for target in scripts.get("project", {}).get("scripts", {}).values():
        yield from _dotted_uses(str(target), "pyproject.toml", modules)


# Importers that use the package as an outsider would not: they may reach a stage's internals.
INSIDE_READERS = ("tests", "bench", "docs", "tools")


def _outward(use: Use, origin: tuple[str, str]) -> bool:
    """Tell whether a use crosses from one stage to another (or comes from outside the code,
    such as pyproject's console script): what makes a name part of a module's interface."""
    if use.importer.split(".")[0] in INSIDE_READERS:
        return False
    return _stage(use.importer) != _stage(origin[0])


def public_names(modules: dict[str, Module], found: set[Use]) -> dict[str, list[str]]:
    """Return, per module, the sorted names its ``__all__`` should hold.

    A module's ``__all__`` is what it offers outside its own stage (package): the names
    another stage, the root package's API or the console script imports from it, and the
    names it re-exports from another module to any importer (a re-export is declared, as
    ``mypy --strict`` and ruff require), and everything a package's ``__init__`` imports. Names used only inside their own stage, or
    only by tests and benchmarks, are that stage's business and are left out. The root
    package keeps its hand-written ``__all__`` (the documented API); a module nobody imports
    from lists its docstring's interface, else its entry point.
    """
    exported: dict[str, set[str]] = {name: set() for name in modules}
    imported_from: set[str] = set()
    for use in found:
        origin = defining(modules, use.via, use.name)
        if origin is None or _private(use.name):
            continue
        imported_from.update((use.via, origin[0]))
        reexport = use.via != origin[0]
        if _outward(use, origin) or reexport:
            exported[use.via].add(use.name)
        if _outward(use, origin) and origin[0] != use.importer:
            exported[origin[0]].add(origin[1])
    out: dict[str, list[str]] = {}
    for name, module in modules.items():
        names = set(exported[name])
        if name == PACKAGE:
            for kept in module.declared or []:
                if defining(modules, name, kept) is not None or kept.startswith("__"):
                    names.add(kept)
        elif module.is_package:
            # What a package's __init__ imports from its modules it imports to offer.
            names.update(n for n, o in module.bindings.items() if o is not None and not _private(n))
        elif not names and name not in imported_from:
            names = set(_interface(module))
        out[name] = sort_names(names)
    return out


# What every module has: never one of its public names.
MODULE_ATTRIBUTES = frozenset(
    [
        "__all__",
        "__builtins__",
        "__cached__",
        "__dict__",
        "__dir__",
        "__doc__",
        "__file__",
        "__getattr__",
        "__loader__",
        "__name__",
        "__package__",
        "__path__",
        "__spec__",
    ]
)


def _private(name: str) -> bool:
    """Tell whether a name is private by convention (``_x``; a dunder such as
    ``__version__`` is public) or an attribute every module has."""
    if name in MODULE_ATTRIBUTES:
        return True
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _interface(module: Module) -> list[str]:
    """The names a module nobody imports from offers: its docstring's, else its entry point."""
    defined = [n for n, origin in module.bindings.items() if origin is None]
    public = [n for n in defined if not _private(n)]
    named = [n for n in dict.fromkeys(_BACKTICKED.findall(module.docstring)) if n in public]
    if named:
        return named
    for entry in ENTRY_POINTS:
        if entry in public:
            return [entry]
    return []


def sort_names(names: Iterable[str]) -> list[str]:
    """Sort as ruff's RUF022 does: CONSTANTS, then Classes, then the rest, each naturally."""

    def key(name: str) -> tuple[int, list[tuple[int, int | str]]]:
        if len(name) > 1 and name.isupper():
            group = 0
        elif name[:1].isupper():
            group = 1
        else:
            group = 2
        parts = [(1, int(p)) if p.isdigit() else (0, p) for p in re.split(r"(\d+)", name) if p]
        return (group, parts)

    return sorted(set(names), key=key)


def count(listing: dict[str, list[str]], modules: dict[str, Module]) -> tuple[int, int]:
    """Return the distinct (defining module, name) pairs of all listings, and the emulator's."""
    pairs = {defining(modules, m, n) or (m, n) for m, names in listing.items() for n in names}
    emulator = {p for p in pairs if p[0] == EMULATOR or p[0].startswith(EMULATOR + ".")}
    return len(pairs), len(emulator)


def _stage(module: str) -> str:
    """Return the package (stage) a module belongs to: ``reconciler.plan`` for ``reconciler.plan.x``."""
    return ".".join(module.split(".")[:2])


def interface(modules: dict[str, Module], found: set[Use]) -> set[tuple[str, str]]:
    """Return the (defining module, name) pairs the house's stages give one another.

    The package's documented API (the root ``__all__``) and every name a module of one stage
    imports from another stage: what a change must keep working for the rest of the package.
    Names used only inside their own stage, or only by tests, are that stage's business.
    """
    pairs: set[tuple[str, str]] = set()
    for use in found:
        origin = defining(modules, use.via, use.name)
        if origin is None or _private(use.name):
            continue
        if use.importer.startswith(PACKAGE + ".") and _stage(use.importer) != _stage(origin[0]):
            pairs.add(origin)
    for name in modules[PACKAGE].declared or []:
        pairs.add(defining(modules, PACKAGE, name) or (PACKAGE, name))
    return pairs


def declared_listing(modules: dict[str, Module]) -> dict[str, list[str]]:
    """Return the ``__all__`` each module holds now (absent: none)."""
    return {name: list(m.declared or []) for name, m in modules.items()}


def render_all(names: list[str]) -> str:
    """Return the ``__all__`` statement for ``names`` (one line if it fits, else one a line)."""
    if not names:
        return "__all__: list[str] = []\n"
    one = "__all__ = [" + ", ".join(f'"{n}"' for n in names) + "]"
    if len(one) <= LINE_LENGTH:
        return one + "\n"
    return "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]\n"


def write_all(module: Module, names: list[str]) -> bool:
    """Write ``names`` as the module's ``__all__``; tell whether the file changed."""
    text = module.path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    statement = render_all(names)
    if module.all_node is not None:
        start, end = (
            module.all_node.lineno - 1,
            module.all_node.end_lineno or module.all_node.lineno,
        )
        new = [*lines[:start], statement, *lines[end:]]
    else:
        at = _insertion_line(module.tree)
        before = lines[:at]
        gap = ["\n"] if before and before[-1].strip() else []
        after = lines[at:]
        tail = ["\n", "\n"] if after and after[0].strip() else []
        if after and not after[0].strip() and len(after) > 1 and after[1].strip():
            tail = ["\n"]
        new = [*before, *gap, statement, *tail, *after]
    updated = "".join(new)
    if updated == text:
        return False
    module.path.write_text(updated, encoding="utf-8")
    return True


def _insertion_line(tree: ast.Module) -> int:
    """Return the line after the module's docstring and leading imports (0-based)."""
    at = 0
    for index, node in enumerate(tree.body):
        docstring = (
            index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        )
        if docstring or isinstance(node, ast.Import | ast.ImportFrom):
            at = node.end_lineno or node.lineno
        elif isinstance(node, ast.If) and all(
            isinstance(n, ast.Import | ast.ImportFrom) for n in node.body
        ):
            at = node.end_lineno or node.lineno  # an ``if TYPE_CHECKING:`` import block
        else:
            break
    return at


def main(argv: list[str] | None = None) -> int:
    """Print the public-name count and the modules without ``__all__``; write with --write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write/update every __all__")
    parser.add_argument(
        "--show",
        metavar="MODULE",
        action="append",
        default=[],
        help="print the names MODULE's __all__ would hold",
    )
    args = parser.parse_args(argv)
    modules = load_modules()
    listing = public_names(modules, uses(modules))
    for name in args.show:
        print(f"{name}: {', '.join(listing.get(name, [])) or '(none)'}")
    if args.write:
        changed = [m.name for m in modules.values() if write_all(m, listing[m.name])]
        print(f"wrote __all__ in {len(changed)} modules")
        modules = load_modules()
    total, emulator = count(listing, modules)
    now_total, now_emulator = count(declared_listing(modules), modules)
    print(
        f"public names (from imports): {total} ({total - emulator} outside the emulator, "
        f"{emulator} in it)"
    )
    print(
        f"public names (in __all__ now): {now_total} ({now_total - now_emulator} outside the "
        f"emulator, {now_emulator} in it)"
    )
    between = interface(modules, uses(modules))
    print(
        f"interface between stages (root API + names one stage imports from another): {len(between)}"
    )
    missing = [m.name for m in modules.values() if m.all_node is None]
    print(f"modules without __all__: {len(missing)}")
    for name in missing:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
