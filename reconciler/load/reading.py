"""``Reading``: manifests read when their resources are first asked for (deprecated).

What ``Scope.start_reading()`` returns and ``compute_plan(reading=...)`` and
``ApplyRequest(reading=...)`` take, kept for one release: manifests were once parsed by forked
workers while the caller went on. They are now read in this process, when ``result()`` is
first called; ``result()`` returns exactly what ``load_environment`` returns, or raises its
``ManifestErrors``, each call alike.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.model.resources import Resource

__all__ = ["Reading"]


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
        """Abandon the read if it was never taken."""
        if self._finish is not None:
            self._finish = None
            self._error = RuntimeError("the manifests' read was closed before it was taken")
            self._close()

    def __enter__(self) -> Reading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
