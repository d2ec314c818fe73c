"""reconcile: keep a cloud database organization equal to YAML manifests.

The package is layered in one direction: ``cli`` parses options and renders; ``manifests``
loads and validates desired resources; ``api`` is the only HTTP client; ``live`` fetches live
objects through it; ``diff`` and ``plan`` are pure; ``apply`` walks a plan's actions; ``state``
keeps what the API cannot tell us (dashboard ids, secret fingerprints). The ``emulator``
subpackage is a separate server implementation of the same API and shares no code with the rest.
"""

__version__ = "0.1.0"
