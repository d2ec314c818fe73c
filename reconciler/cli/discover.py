"""``reconcile discover``: complete a pipe manifest with the columns its source's samples carry.

Given MANIFEST (a pipe manifest without ``destination.columns`` and ``fieldMappings``), prints
it completed (types as the service inferred them), or writes it back with ``--write``. Without
MANIFEST, the source is given by flags (kafka brokers and topics, or a kinesis stream) and a new
manifest is drafted, completed and printed, or written to ``NAME.yaml`` with ``--write``. The
work is done by ``reconciler.inventory.discover``. Secret references are resolved as for
``plan`` and never printed (flags name the variables that hold credentials, never a value).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.cli.config import pass_settings
from reconciler.cli.inventory import read_live
from reconciler.cli.options import connection_options, setting_option

if TYPE_CHECKING:
    from reconciler.settings import Settings

__all__: list[str] = []


@click.command("discover")
@click.argument(
    "manifest", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--write",
    is_flag=True,
    help="Write the completed manifest back to MANIFEST (with flags: to NAME.yaml) instead of "
    "printing it.",
)
@click.option("--service", metavar="NAME|ID", help="Without MANIFEST: the pipe's service.")
@click.option("--name", metavar="NAME", help="Without MANIFEST: the pipe's name.")
@click.option("--format", "record_format", default="JSONEachRow", show_default=True)
@click.option("--kafka-brokers", metavar="HOST:PORT[,…]", help="Kafka brokers.")
@click.option("--kafka-topics", metavar="TOPIC", help="Kafka topic(s) to sample.")
@click.option(
    "--kafka-user-env", metavar="VAR", help="Variable holding the Kafka user name (PLAIN)."
)
@click.option(
    "--kafka-password-env", metavar="VAR", help="Variable holding the Kafka password (PLAIN)."
)
@click.option("--kinesis-stream", metavar="NAME", help="Kinesis stream to sample.")
@click.option("--kinesis-region", metavar="REGION", help="Region of the Kinesis stream.")
@click.option("--kinesis-iam-role", metavar="ARN", help="Role that reads the Kinesis stream.")
@click.option("--database", metavar="NAME", help="Destination database of the drafted pipe.")
@click.option("--table", metavar="NAME", help="Destination table of the drafted pipe.")
@setting_option("organization")
@connection_options
@pass_settings
def discover(
    settings: Settings,
    insecure: bool,
    manifest: Path | None,
    write: bool,
    **flags: str | None,
) -> int:
    """Add destination.columns and fieldMappings inferred from a kafka or kinesis source's
    samples to MANIFEST (or to a manifest drafted from flags), keeping its comments."""
    from reconciler.inventory.discover import discover_file

    organization = settings.organization
    with tempfile.TemporaryDirectory(prefix="reconcile-discover-") as scratch:
        target = manifest if manifest is not None else _drafted(flags, organization, Path(scratch))
        found = read_live(
            settings,
            insecure,
            lambda client, org: discover_file(client, org or None, target),
            need_org=False,
        )
    if not write:
        click.echo(found.text, nl=False)
        return 0
    out = manifest if manifest is not None else Path(f"{flags['name']}.yaml")
    if manifest is None and out.exists():
        raise click.UsageError(f"{out} exists: not overwritten (move it, or pass it as MANIFEST)")
    out.write_text(found.text, encoding="utf-8")
    for pipe in found.pipes:
        sample = f" (sample {pipe.sample})" if pipe.sample else ""
        click.echo(f"{out}: pipe {pipe.name}: {len(pipe.columns)} columns discovered{sample}")
    return 0


def _drafted(flags: dict[str, str | None], organization: str | None, scratch: Path) -> Path:
    """Write the manifest the flags describe into ``scratch`` and return its path."""
    from reconciler.inventory.discover import Draft, draft_manifest

    name, service = flags["name"], flags["service"]
    if not name or not service:
        raise click.UsageError("give MANIFEST, or --service and --name with the source's flags")
    kafka = flags["kafka_brokers"] or flags["kafka_topics"]
    kinesis = flags["kinesis_stream"] or flags["kinesis_region"]
    if bool(kafka) == bool(kinesis):
        raise click.UsageError(
            "give one source: --kafka-brokers and --kafka-topics, or --kinesis-stream and "
            "--kinesis-region"
        )
    source: dict[str, object] = {"format": flags["record_format"]}
    if kafka:
        kind = "kafka"
        source.update(
            brokers=_needed(flags, "kafka_brokers"), topics=_needed(flags, "kafka_topics")
        )
        user, password = flags["kafka_user_env"], flags["kafka_password_env"]
        if user or password:
            source["credentials"] = {
                "username": _reference(_needed(flags, "kafka_user_env")),
                "password": _reference(_needed(flags, "kafka_password_env")),
            }
    else:
        kind = "kinesis"
        source.update(
            streamName=_needed(flags, "kinesis_stream"),
            region=_needed(flags, "kinesis_region"),
            iteratorType="TRIM_HORIZON",
            iamRole=_needed(flags, "kinesis_iam_role"),
        )
    draft = Draft(name, service, organization, kind, source, flags["database"], flags["table"])
    path = scratch / f"{name}.yaml"
    path.write_text(draft_manifest(draft), encoding="utf-8")
    return path


def _reference(variable: str) -> object:
    """A ``{fromEnv: VAR}`` secret reference, written on one line."""
    from ruamel.yaml.comments import CommentedMap

    reference = CommentedMap([("fromEnv", variable)])
    reference.fa.set_flow_style()
    return reference


def _needed(flags: dict[str, str | None], key: str) -> str:
    value = flags[key]
    if not value:
        raise click.UsageError(f"--{key.replace('_', '-')} is needed for this source")
    return value
