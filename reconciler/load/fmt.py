"""Canonical formatting of manifests: a ruamel round trip that keeps every comment.

The canonical form is the one ``export`` writes: two-space mappings, list items indented two
spaces under their key (``sequence=4, offset=2``), no line folding, quotes as the author
wrote them, flow collections (``{sourceField: id, …}``) kept as written. Comments —
the ``yaml-language-server`` modeline first among them — survive, since ruamel's round-trip
loader attaches them to the nodes. Every file found is a manifest, as for ``validate``: one
whose documents are not reconcile manifests (``apiVersion: reconcile/v1``) is refused at the
first such document, never skipped — a skipped file could be a manifest whose apiVersion was
mistyped, silently gone from every plan.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

__all__ = ["API_VERSION", "canonical_yaml", "format_file"]


API_VERSION = "reconcile/v1"


def canonical_yaml() -> YAML:
    """Return the round-trip YAML instance of the canonical style (shared with ``export``)."""
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True  # a quote the author wrote stays: it may be needed elsewhere
    # ``null`` means "reset to the service's default": it is written out, never left blank.
    yaml.representer.add_representer(type(None), _represent_null)
    return yaml


def _represent_null(representer: Any, _: None) -> Any:
    return representer.represent_scalar("tag:yaml.org,2002:null", "null")


@dataclass(frozen=True)
class Formatted:
    """One file's outcome: its canonical text, or why it was left alone."""

    path: Path
    original: str
    text: str | None = None
    error: str | None = None  # ":LINE:COL: problem", to follow the file name

    @property
    def changed(self) -> bool:
        """Tell whether the canonical text differs from the file."""
        return self.text is not None and self.text != self.original


def format_text(text: str) -> tuple[str | None, str | None]:
    """Return ``(canonical text, None)``, or ``(None, ":LINE:COL: reason")`` for a file that
    is not a manifest."""
    yaml = canonical_yaml()
    docs: list[Any] = list(yaml.load_all(text))
    strangers = [d for d in docs if d is not None and not _is_manifest(d)]
    if not docs or strangers or all(d is None for d in docs):
        lc = getattr(strangers[0], "lc", None) if strangers else None
        where = f":{lc.line + 1}:{lc.col + 1}" if lc is not None else ":1:1"
        return None, (
            f"{where}: not a reconcile manifest (no `apiVersion: {API_VERSION}`); keep other "
            "YAML files out of the manifest paths (or out of the hooks' `files:`)"
        )
    out = io.StringIO()
    if len(docs) == 1:
        yaml.dump(docs[0], out)
    else:
        yaml.explicit_start = text.lstrip().startswith("---")
        yaml.dump_all(docs, out)
    return out.getvalue(), None


def format_file(path: Path) -> Formatted:
    """Format one file in memory (nothing is written)."""
    try:
        original = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Formatted(path, "", error=f": cannot read: {exc}")
    try:
        text, refused = format_text(original)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        return Formatted(path, original, error=f"{where}: {problem}")
    return Formatted(path, original, text=text, error=refused)


def _is_manifest(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("apiVersion") == API_VERSION
