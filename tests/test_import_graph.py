"""The import graph: no module of the client side takes part in an import circle.

A circle (``cli.apply`` ↔ ``cli.machine``, ``state.backend`` ↔ its backends) means neither
module can be understood, or loaded, without the other; the layers contract (``make lint``)
sees only imports between packages, this test also those inside one.
"""

from __future__ import annotations

import grimp


def circles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Return the strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module) & modules:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_outside_the_emulator_is_part_of_an_import_circle() -> None:
    graph = grimp.build_graph("reconciler")
    modules = {m for m in graph.modules if not m.startswith("reconciler.emulator")}
    assert circles(graph, modules) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.y", imported="a.z")
    assert circles(graph, {"a.x", "a.y", "a.z"}) == [["a.x", "a.y"]]
