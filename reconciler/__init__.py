"""reconcile: keep a cloud database organization equal to YAML manifests.

One folder per stage of the data flow, each importing only downwards (checked by
import-linter, ``make lint``):

- ``model``: shared vocabulary (resources, field rules, secret references, errors);
- ``load``: manifests from YAML, validated against the JSON Schemas;
- ``client``: the one HTTP client, its request budget, and the read layer;
- ``state``: what the API cannot tell us, and where it is kept;
- ``plan``: pure diff and planners, the immutable plan, rendering, the plan file;
- ``apply``: walks a plan's actions and verifies every answer;
- ``inventory``: read-only views (``get``, ``export``, ``check backups``);
- ``cli``: click only — parse options, call one core function, render.

The ``emulator`` package is a separate implementation of the server and shares no code with
the rest.
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # The version is read from package metadata on first use (see reconciler.model.version).
    if name == "__version__":
        from reconciler.model.version import package_version

        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
