"""An environment's effective manifests, printed (``render``) and compared (``compare``).

``render_yaml`` prints them as ``kustomize build`` does: one YAML stream, documents separated
by ``---``, each headed by a comment naming the files it came from (the base manifest, then
each overlay that patched it). ``render_json`` gives the same as one JSON document. Secret
fields print as the references written in the manifests (``{fromEnv: …}``): nothing is
resolved here.

``compare`` tells how two environments' effective manifests differ, resource by resource and
field by field: a resource present in one only, and every field whose value differs (mappings
are walked, and lists of mappings of the same length, so a path such as ``spec.tiles[0].w``
names the one value that differs; other lists are one value, as overlays replace them whole),
values equal only when of one JSON type (``true`` is not ``1``, ``5`` not ``5.0``): the generic
nested diff of ``model.nesteddiff``.
Read as a promotion from A to B, it is what B's desired state would gain, lose and change.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

from reconciler.load.overlays import Effective
from reconciler.model.json import JsonObject, JsonValue
from reconciler.model.nesteddiff import differences, same_length_objects
from reconciler.model.resources import format_path

__all__ = [
    "compare",
    "render_comparison_json",
    "render_comparison_text",
    "render_json",
    "render_yaml",
]


FORMAT_VERSION = 1


def render_yaml(manifests: Sequence[Effective]) -> str:
    """Return the effective manifests as one YAML stream, each headed by its source files."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep key order
    yaml.width = 100
    parts: list[str] = []
    for manifest in manifests:
        buffer = io.StringIO()
        yaml.dump(manifest.document, buffer)
        parts.append(f"# Source: {', '.join(manifest.files)}\n{buffer.getvalue()}")
    return "---\n".join(parts)


def render_json(manifests: Sequence[Effective], environment: str | None) -> str:
    """Return the effective manifests as one JSON document (``formatVersion``, ``manifests``)."""
    body = {
        "formatVersion": FORMAT_VERSION,
        "environment": environment,
        "manifests": [
            {"key": m.key, "sources": list(m.files), "manifest": m.document} for m in manifests
        ],
    }
    return json.dumps(body, indent=2) + "\n"


class Presence(StrEnum):
    """Where a compared resource exists."""

    BOTH = "both"
    ONLY_A = "onlyA"
    ONLY_B = "onlyB"


@dataclass(frozen=True)
class FieldDifference:
    """One field whose value differs; ``in_a``/``in_b`` false when that side lacks it."""

    path: str
    a: JsonValue
    b: JsonValue
    in_a: bool = True
    in_b: bool = True

    def to_dict(self) -> JsonObject:
        """Return the difference as JSON data (an absent side is left out)."""
        out: JsonObject = {"path": self.path}
        if self.in_a:
            out["a"] = self.a
        if self.in_b:
            out["b"] = self.b
        return out


@dataclass(frozen=True)
class ResourceDifference:
    """One resource that differs between two environments."""

    key: str
    presence: Presence
    fields: tuple[FieldDifference, ...] = ()
    files_a: tuple[str, ...] = ()
    files_b: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    """How environment ``a``'s effective manifests differ from environment ``b``'s."""

    a: str
    b: str
    resources: tuple[ResourceDifference, ...] = field(default=())
    same: int = 0

    @property
    def differs(self) -> bool:
        """Tell whether anything differs."""
        return bool(self.resources)


_ABSENT: Any = object()


def _fields(a: Any, b: Any) -> tuple[FieldDifference, ...]:
    """Every leaf difference of ``a`` against ``b`` (same-length lists of mappings walked)."""
    found = differences(b, a, lists=same_length_objects, absent=_ABSENT)
    return tuple(
        FieldDifference(
            format_path(path),
            None if new is _ABSENT else cast(JsonValue, new),  # leaves of the JSON documents
            None if old is _ABSENT else cast(JsonValue, old),
            new is not _ABSENT,
            old is not _ABSENT,
        )
        for path, old, new in found
    )


def compare(a_name: str, a: Sequence[Effective], b_name: str, b: Sequence[Effective]) -> Comparison:
    """Return how environment ``a``'s effective manifests differ from ``b``'s."""
    left = {m.key: m for m in a}
    right = {m.key: m for m in b}
    out: list[ResourceDifference] = []
    same = 0
    for key in sorted({*left, *right}):
        ma, mb = left.get(key), right.get(key)
        if mb is None and ma is not None:
            out.append(ResourceDifference(key, Presence.ONLY_A, files_a=ma.files))
        elif ma is None and mb is not None:
            out.append(ResourceDifference(key, Presence.ONLY_B, files_b=mb.files))
        elif ma is not None and mb is not None:
            fields = _fields(ma.document, mb.document)
            if fields:
                out.append(ResourceDifference(key, Presence.BOTH, fields, ma.files, mb.files))
            else:
                same += 1
    return Comparison(a_name, b_name, tuple(out), same)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def render_comparison_text(result: Comparison) -> str:
    """Return the comparison for people: what promoting A to B would change in B."""
    a, b = result.a, result.b
    if not result.differs:
        return f"{a} and {b} have the same effective manifests ({result.same} resources).\n"
    lines = [f"Promoting {a} to {b} would change {b}'s desired state:", ""]
    for diff in result.resources:
        if diff.presence is Presence.ONLY_A:
            lines.append(f"+ {diff.key}  (only in {a}: {', '.join(diff.files_a)})")
            continue
        if diff.presence is Presence.ONLY_B:
            lines.append(f"- {diff.key}  (only in {b}: {', '.join(diff.files_b)})")
            continue
        lines.append(f"~ {diff.key}")
        for f in diff.fields:
            was = _show(f.b) if f.in_b else "(absent)"
            new = _show(f.a) if f.in_a else "(absent)"
            lines.append(f"    {f.path}: {b} {was} -> {a} {new}")
    changed = sum(1 for d in result.resources if d.presence is Presence.BOTH)
    only_a = sum(1 for d in result.resources if d.presence is Presence.ONLY_A)
    only_b = sum(1 for d in result.resources if d.presence is Presence.ONLY_B)
    lines += [
        "",
        f"{only_a} only in {a}, {only_b} only in {b}, {changed} differing, {result.same} the same.",
    ]
    return "\n".join(lines) + "\n"


def render_comparison_json(result: Comparison, exit_code: int = 0) -> str:
    """Return the comparison as one JSON document."""
    body = {
        "formatVersion": FORMAT_VERSION,
        "a": result.a,
        "b": result.b,
        "same": result.same,
        "resources": [
            {
                "key": d.key,
                "presence": str(d.presence),
                "sourcesA": list(d.files_a),
                "sourcesB": list(d.files_b),
                "fields": [f.to_dict() for f in d.fields],
            }
            for d in result.resources
        ],
        "exitCode": exit_code,
    }
    return json.dumps(body, indent=2) + "\n"
