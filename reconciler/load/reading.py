"""``Reading``: manifests being read now, their resources taken later.

``start_loading`` and ``start_environment`` begin a read and return at once: with many files,
forked workers (``reconciler.load.workers``) are parsing while the caller goes on. The command
line starts the read before it imports the plan and apply stages, so that the workers parse
while the rest of the program loads. ``result()`` ends the read (this process reads the
blocks left, then takes the workers' answers) and returns exactly what ``load_resources``
returns, or raises its ``ManifestErrors``. A read never taken is ended by ``close()`` or by
leaving its ``with`` block: its workers are killed and reaped.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.model.resources import Resource


def _nothing() -> None:
    return None


class Reading:
    """Manifests being read: ``result()`` takes them, once; ``close()`` abandons the read."""

    def __init__(
        self, finish: Callable[[], list[Resource]], close: Callable[[], None] = _nothing
    ) -> None:
        self._finish: Callable[[], list[Resource]] | None = finish
        self._close = close
        self._resources: list[Resource] = []
        self._error: BaseException | None = None

    def result(self) -> list[Resource]:
        """Return the resources read, or raise what reading them raised (each call alike)."""
        finish, self._finish = self._finish, None
        if finish is not None:
            try:
                self._resources = finish()
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                self._close()
        if self._error is not None:
            raise self._error
        return self._resources

    def close(self) -> None:
        """End the read if it was never taken (its workers are killed and reaped)."""
        if self._finish is not None:
            self._finish = None
            self._error = RuntimeError("the manifests' read was closed before it was taken")
            self._close()

    def __enter__(self) -> Reading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
