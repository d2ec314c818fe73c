"""Run the command line with ``python -m reconciler``."""

from reconciler.cli import main

__all__: list[str] = []


main()
