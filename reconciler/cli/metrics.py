"""``--metrics-file PATH``: the run's metrics (``reconciler.metrics``) written when it ends.

``plan``, ``apply`` and ``check backups`` accept the flag. When the command ends (success,
finding or error) the file is replaced atomically, as the node exporter's textfile collector
expects; what it holds, and when a run counts as a success, is the core's
(``reconciler.metrics``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click

__all__: list[str] = []


def metrics_option(command: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Add ``--metrics-file`` to a command and write the file when the command ends."""

    def decorate(func: Callable[..., int]) -> Callable[..., int]:
        option = click.option(
            "--metrics-file",
            type=click.Path(dir_okay=False),
            metavar="PATH",
            help="Write the run's metrics here in Prometheus text format (atomically).",
        )

        def wrapper(*args: Any, metrics_file: str | None = None, **kw: Any) -> int:
            if not metrics_file:
                return func(*args, **kw)
            from reconciler.metrics import RunRecord, recording, write_textfile

            records: list[RunRecord] = []
            try:
                with recording(command) as record:
                    records.append(record)
                    code = func(*args, **kw)
                    record.finish(code)
                    return code
            finally:  # after the block, which adds the clients' requests to the record
                if records:
                    write_textfile(Path(metrics_file), records[0])

        return option(wraps(func)(wrapper))

    return decorate
