"""Run the command line with ``python -m reconciler``."""

from reconciler.cli import main

main()
