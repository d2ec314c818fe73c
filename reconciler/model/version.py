"""The package version, read from the installed distribution's metadata (its one home is pyproject).

The distribution is ``reconcile-pipes`` (the name ``reconcile`` on the package index is another
project's); the command is ``reconcile`` and the import package ``reconciler``.

Reading metadata imports ``importlib.metadata`` (and through it the ``email`` package), about
30 ms that most commands never need; so the version is read on first use: ``package_version()``
or the module attribute ``__version__``.
"""

from __future__ import annotations

from functools import cache

__all__ = ["package_version"]


DISTRIBUTION = "reconcile-pipes"


@cache
def package_version() -> str:
    """Return the installed package's version (``0+unknown`` from a never-installed tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
