"""Write the generated reference pages of the documentation site (run by mkdocs-gen-files).

Nothing here is prose to keep in step by hand: the manifest and project-file fields come from
the JSON Schemas in ``schemas/`` (type, bounds, values, default, description) with the access
``reconcile explain`` gives each manifest field — writable, create-time, sensitive, required to
create: the field catalogue's ``x-reconcile`` annotations in the same schemas — and an example
value taken from the example manifests; the environment variables from the settings table; the plan's JSON format from
``schemas/plan.schema.json``; the exit codes from the root command's help. The changelog page
is ``CHANGELOG.md`` when the repository has one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mkdocs_gen_files
from ruamel.yaml import YAML

from reconciler.load.explain import explain
from reconciler.load.schema import KIND_FILES
from reconciler.model.schematree import Member, document, members, resolve, through_items, type_name
from reconciler.settings.table import SETTINGS, default_of

ROOT = Path(__file__).resolve().parent.parent
# Every manifest kind the loader knows, each on a page named after its schema file.
KINDS = {kind: name.removesuffix(".schema.json") for kind, name in KIND_FILES.items()}
EXAMPLE_DIRS = ("manifests", "examples/environments/base", "examples/sources")
_BOUNDS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "≥ {} chars"),
    ("maxLength", "≤ {} chars"),
    ("minItems", "≥ {} items"),
    ("maxItems", "≤ {} items"),
    ("pattern", "matches `{}`"),
)


def code(value: Any) -> str:
    """Show a JSON value inline, short and safe inside a table cell."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > 70:
        text = text[:67] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def cell(text: str) -> str:
    """Make free text fit one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def type_cell(node: dict[str, Any], base: str) -> str:
    """Name a field's type in a table cell."""
    # Braces escaped: attr_list takes a cell ending in `{fromFile: PATH}` for HTML attributes.
    return cell(type_name(node, base)).replace("{", "\\{").replace("}", "\\}")


def constraints(node: dict[str, Any]) -> str:
    """Bounds and allowed values."""
    parts = [fmt.format(node[key]) for key, fmt in _BOUNDS if key in node]
    if "enum" in node:
        parts.append("one of " + ", ".join(code(v) for v in node["enum"]))
    if "const" in node:
        parts.append("always " + code(node["const"]))
    return "; ".join(parts).replace("|", "\\|")


def examples() -> dict[str, dict[tuple[str, ...], Any]]:
    """The first value each field path has in the example manifests, per kind."""
    found: dict[str, dict[tuple[str, ...], Any]] = {kind: {} for kind in KINDS}

    def walk(kind: str, path: tuple[str, ...], value: Any) -> None:
        found[kind].setdefault(path, value)
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(kind, (*path, str(key)), sub)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    for key, sub in item.items():
                        walk(kind, (*path, str(key)), sub)

    yaml = YAML(typ="safe")
    for directory in EXAMPLE_DIRS:
        for file in sorted((ROOT / directory).rglob("*.yaml")):
            for manifest in yaml.load_all(file.read_text(encoding="utf-8")):
                if isinstance(manifest, dict) and manifest.get("kind") in KINDS:
                    walk(str(manifest["kind"]), (), manifest)
    return found


def children(node: dict[str, Any], base: str) -> dict[str, Member]:
    """Sub-fields of a node (through list items and its ``oneOf``/``anyOf``/``allOf`` parts)."""
    return members(*through_items(node, base))


def sections(
    node: dict[str, Any], base: str, path: tuple[str, ...], depth: int = 0
) -> Iterator[tuple[tuple[str, ...], dict[str, Any], str]]:
    """Every object with sub-fields, depth first: a section of the page each."""
    subs = children(node, base)
    if not subs or depth > 8:
        return
    yield path, node, base
    for name, (sub, sub_base, _required) in subs.items():
        yield from sections(sub, sub_base, (*path, name), depth + 1)


def field_page(title: str, intro: str, schema: str, kind: str | None) -> str:
    """A page with one section per object of ``schema`` and one table row per field."""
    root, base = resolve(document(schema), schema)
    sample = examples().get(kind or "", {})
    lines = [f"# {title}", "", intro, ""]
    if root.get("description"):
        lines += [str(root["description"]), ""]
    header = "| field | type | default | description |"
    for path, node, node_base in sections(root, base, ()):
        name = ".".join(path) or "(top level)"
        lines += [f"## `{name}`" if path else "## Top level", ""]
        if path and node.get("description"):
            lines += [cell(str(node["description"])), ""]
        lines += [header, "|---|---|---|---|"]
        for field, (sub, sub_base, required) in children(node, node_base).items():
            full = (*path, field)
            default = code(sub["default"]) if "default" in sub else ""
            label = f"`{field}`" + (" (required)" if required else "")
            notes = [cell(str(sub.get("description") or sub.get("title", "")))]
            if constraints(sub):
                notes.append(f"**Bounds:** {constraints(sub)}")
            if kind is not None:
                notes.append(f"**Access:** {cell(explain('.'.join((kind, *full))).access)}")
                if full in sample:
                    notes.append(f"**Example:** {code(sample[full])}")
            row = [label, type_cell(sub, sub_base), default, "<br>".join(notes)]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def manifest_pages() -> None:
    """One page per manifest kind."""
    for kind, stem in KINDS.items():
        intro = (
            f"Every field of a `{kind}` manifest, from `schemas/{stem}.schema.json`. *Access* is "
            f"what `reconcile explain {kind}.FIELD` says; *example* is a value from the example "
            "manifests. Editors complete and check fields through the modeline "
            f"`# yaml-language-server: $schema=schemas/{stem}.schema.json`."
        )
        text = field_page(f"{kind} manifest", intro, f"{stem}.schema.json", kind)
        with mkdocs_gen_files.open(f"reference/manifests/{stem}.md", "w") as out:
            out.write(text)


def project_page() -> None:
    """The project file (reconcile.yaml)."""
    intro = (
        "Every key of `reconcile.yaml`, from `schemas/project.schema.json`. Each setting is "
        "resolved flag > environment variable > project file > default; with `environments:`, "
        "flag > the environment's own value > environment variable > project file > default. "
        "See [Environments](../concepts/environments.md) and "
        "[environment variables](environment.md)."
    )
    text = field_page("Project file", intro, "project.schema.json", None)
    with mkdocs_gen_files.open("reference/project-file.md", "w") as out:
        out.write(text)


def plan_page() -> None:
    """The plan document of ``plan -o json`` and ``plan --out``."""
    intro = (
        "`reconcile plan -o json` prints, and `plan --out FILE` saves, one JSON document "
        "described by `schemas/plan.schema.json` (`formatVersion: 1`). An absent `old`/`new` "
        "means the field was absent; secrets in bodies read `(sensitive)`, and `secrets` "
        "holds HMAC fingerprints, never values. `plan --all-envs -o json` prints one document "
        "with a plan document per environment (`schemas/plan-environments.schema.json`)."
    )
    text = field_page("Plan JSON format", intro, "plan.schema.json", None)
    with mkdocs_gen_files.open("reference/plan-format.md", "w") as out:
        out.write(text)


def environment_page() -> None:
    """The settings table, then the variables that are not settings of a run."""
    lines = [
        "# Environment variables",
        "",
        "Every setting a run reads, with its flag, variable, project-file key and built-in "
        "default (from `reconciler/settings/table.py`). A bad value is an error naming where "
        "it came from — flag, variable, env file or project-file key — before anything is "
        "sent.",
        "",
        "| variable | flag | project-file key | default |",
        "|---|---|---|---|",
    ]
    for setting in SETTINGS:
        if setting.flag is None and setting.variable is None:
            continue
        default = default_of(setting)
        shown = "" if default in (None, ()) else code(default)
        if setting.secret:
            shown = "(secret: never shown)"
        key = "" if not setting.in_project else f"`{setting.name}`"
        if setting.in_environment:
            key = (key + " " if key else "") + f"`environments.NAME.{setting.name}`"
        variable = f"`{setting.variable}`" if setting.variable else ""
        lines.append(f"| {variable} | `{setting.flag}` | {key} | {shown} |")
    lines += ["", '--8<-- "docs/snippets/environment-other.md"', ""]
    with mkdocs_gen_files.open("reference/environment.md", "w") as out:
        out.write("\n".join(lines))


def exit_codes_page() -> None:
    """The exit codes, as ``reconcile --help`` states them, then the details."""
    from reconciler.cli import cli

    help_text = str(cli.help or "")
    summary = help_text.split("Exit codes:", 1)[1].strip()
    lines = [
        "# Exit codes",
        "",
        "As `reconcile --help` states them:",
        "",
        "```text",
        "Exit codes:",
        *(line.strip() for line in summary.splitlines() if line.strip()),
        "```",
        "",
        '--8<-- "docs/snippets/exit-codes-detail.md"',
        "",
    ]
    with mkdocs_gen_files.open("reference/exit-codes.md", "w") as out:
        out.write("\n".join(lines))


def _site_link(match: re.Match[str]) -> str:
    """Keep a changelog link that works on the site: to the web or a docs page; else its text.

    ``CHANGELOG.md`` sits at the top of the repository, where a link may point at a file of the
    repository or an anchor of the README that the site does not have.
    """
    text, target = match.group(1), match.group(2)
    if re.match(r"[a-z]+://", target):
        return match.group(0)
    page = target.split("#", 1)[0]
    if page.startswith("docs/") and (ROOT / page).is_file():
        return f"[{text}]({target.removeprefix('docs/')})"
    return text


def changelog_page() -> None:
    """``CHANGELOG.md`` when the repository has one; else where changes are recorded."""
    changelog = ROOT / "CHANGELOG.md"
    if changelog.is_file():
        text = re.sub(
            r"\[([^\]]+)\]\(([^)\s]+)\)", _site_link, changelog.read_text(encoding="utf-8")
        )
    else:
        text = (
            "# Changelog\n\nThe changes of each release are recorded in `CHANGELOG.md` at the "
            "top of the repository (Keep a Changelog, Semantic Versioning); this page shows "
            "it once the repository has one.\n"
        )
    with mkdocs_gen_files.open("changelog.md", "w") as out:
        out.write(text)


manifest_pages()
project_page()
plan_page()
environment_page()
exit_codes_page()
changelog_page()
