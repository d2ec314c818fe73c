"""The package version, read from the installed package's metadata (its one home is pyproject)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reconcile")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
