"""Hostile manifests, for the limit tests and the limits benchmark.

``alias_bomb`` is the "billion laughs" of YAML: each level is a list of ``width`` aliases to
the level below, so ``levels`` levels expand to ``width ** levels`` nodes from a few hundred
bytes. It sits under fields the Pipe schema allows (``spec.destination.columns`` and
``spec.settings``), as a contributor's pull request could. ``deep_nesting`` is ``depth``
nested flow sequences (``[[[…]]]``) under ``spec.settings``.
"""

from __future__ import annotations

ORG = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
SERVICE = "3f6a1c2e-8b4d-4e7f-9a1b-2c3d4e5f6a71"
PIPE = "0b5e7d1c-2a3f-4b6e-8c9d-1e2f3a4b5c61"

HEAD = f"""\
apiVersion: reconcile/v1
kind: Pipe
metadata:
  name: bomb
spec:
  organizationId: {ORG}
  serviceId: {SERVICE}
  pipeId: {PIPE}
  source:
    kafka: {{}}
"""


def alias_bomb(levels: int = 8, width: int = 10) -> str:
    """Return a Pipe manifest whose columns expand to ``width ** levels`` nodes."""
    lines = [HEAD, "  destination:\n", "    columns:\n"]
    lines.append("      - &l0 {name: a, type: String}\n")
    for level in range(1, levels + 1):
        refs = ", ".join(f"*l{level - 1}" for _ in range(width))
        lines.append(f"      - &l{level} [{refs}]\n")
    lines.append("  settings:\n")
    lines.append(f"    engine_max_threads: *l{levels}\n")
    return "".join(lines)


def deep_nesting(depth: int = 100_000) -> str:
    """Return a Pipe manifest with ``depth`` nested flow sequences under ``spec.settings``."""
    return HEAD + "  settings:\n    engine_max_threads: " + "[" * depth + "]" * depth + "\n"
