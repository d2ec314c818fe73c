"""The terminal side of a running command: the event loop, colour, and progress on stderr.

``run`` drives a core coroutine to its result. Colour is used only on a TTY and never when
``NO_COLOR`` is set. Progress goes to stderr: a tqdm bar on a TTY; elsewhere (CI logs) one
plain line every ``LOG_INTERVAL`` seconds while a phase lasts, so a run paced by its request
budget never looks hung and a short run prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import click

__all__: list[str] = []


T = TypeVar("T")


def use_color(stream: Any = None) -> bool:
    """Tell whether to colour output: a TTY, and NO_COLOR unset."""
    if os.environ.get("NO_COLOR"):
        return False
    target = stream or sys.stdout
    return bool(getattr(target, "isatty", lambda: False)())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion and return its result."""
    import asyncio

    return asyncio.run(coro)


class Progress:
    """A tqdm counter on stderr on a TTY (tqdm is imported only then); a periodic line elsewhere."""

    # Seconds between two progress lines when stderr is not a terminal.
    LOG_INTERVAL = 10.0

    def __init__(self, description: str, total: int | None = None, unit: str = "req") -> None:
        self._bar: Any = None
        self._log: _ProgressLog | None = None
        if not sys.stderr.isatty():
            self._log = _ProgressLog(description, total, unit, self.LOG_INTERVAL)
            return
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            desc=description,
            unit=unit,
            file=sys.stderr,
            leave=False,
            dynamic_ncols=True,
        )

    def __call__(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)
        elif self._log is not None:
            self._log.done += n

    def close(self) -> None:
        """Remove the bar (or stop the periodic lines)."""
        if self._bar is not None:
            self._bar.close()
        if self._log is not None:
            self._log.stop()


class _ProgressLog:
    """Prints ``reconcile: PHASE: N[/TOTAL] UNITs done after S s`` every ``interval`` seconds.

    A daemon thread, because the phase may be asleep waiting for the request budget when a
    line is due; the first line comes only after one interval, so short runs print nothing.
    """

    def __init__(self, description: str, total: int | None, unit: str, interval: float) -> None:
        import threading
        import time

        self.done = 0
        self._text = (description, total, unit)
        self._started = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        import time

        while not self._stopped.wait(interval):
            description, total, unit = self._text
            count = f"{self.done}/{total}" if total is not None else str(self.done)
            elapsed = time.monotonic() - self._started
            units = "requests" if unit == "req" else f"{unit}s"
            click.echo(
                f"reconcile: {description}: {count} {units} done after {elapsed:.0f} s",
                err=True,
            )

    def stop(self) -> None:
        """Stop the lines (the thread ends at once)."""
        self._stopped.set()
        self._thread.join()


class WaitProgress:
    """Pipes apply is waiting for: a status bar on a TTY, else a line every ``every`` seconds."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self._tty = sys.stderr.isatty()
        self._bar: Any = None
        self._last: float | None = None

    def __call__(self, pending: Sequence[Any]) -> None:
        shown = ", ".join(
            f"{w.name} {w.state} → {'/'.join(w.wanted)} ({w.seconds:.0f}s)" for w in pending[:3]
        )
        more = f", and {len(pending) - 3} more" if len(pending) > 3 else ""
        pipes_only = all(getattr(w, "subject", "pipe") == "pipe" for w in pending)
        what = "pipe(s)" if pipes_only else "resource(s)"
        text = f"waiting for {len(pending)} {what}: {shown}{more}"
        if self._tty:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(file=sys.stderr, leave=False, bar_format="{desc}", position=1)
            self._bar.set_description_str(text)
            return
        now = time.monotonic()
        if self._last is None or now - self._last >= self.every:
            self._last = now
            click.echo(text, err=True)

    def close(self) -> None:
        """Remove the status bar."""
        if self._bar is not None:
            self._bar.close()
