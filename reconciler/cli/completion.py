"""Shell completion: ``reconcile completion SHELL`` and ``--target`` completing ``Kind/name``.

Click completes commands and options itself; ``complete_targets`` adds the resources of the
manifests found under the current directory (parsed, not validated: completion must be
quick and must work while a manifest is being edited).
"""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem, get_completion_class

__all__: list[str] = []


SHELLS = ("bash", "zsh", "fish")


def complete_targets(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Return ``Kind/name`` of every manifest under the current directory matching ``incomplete``."""
    from pathlib import Path

    from reconciler.load.manifestfiles import find_manifest_files
    from reconciler.load.yamlsource import YamlSyntaxError, parse
    from reconciler.model.errors import ReconcileError
    from reconciler.model.resources import KINDS

    try:
        files = find_manifest_files(["."])
    except ReconcileError:
        return []
    names: set[str] = set()
    for file in files:
        try:
            docs = parse(Path(file).read_bytes())
        except (OSError, YamlSyntaxError):
            continue
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
                continue
            metadata = doc.get("metadata")
            if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
                names.add(f"{doc['kind']}/{metadata['name']}")
    wanted = incomplete.lower()
    return [CompletionItem(n) for n in sorted(names) if n.lower().startswith(wanted)]


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script of SHELL, e.g. eval "$(reconcile completion bash)"."""
    cls = get_completion_class(shell)
    assert cls is not None
    root = ctx.find_root().command
    click.echo(cls(root, {}, "reconcile", "_RECONCILE_COMPLETE").source())
