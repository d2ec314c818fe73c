"""A local emulator of the whole API: management (``/v1``) and dashboards (``/api/v2``).

It is a separate implementation of the server side and imports nothing from the rest of
``reconciler`` (only the standard library, starlette and uvicorn), so that a misreading of the
API on one side is caught by the other instead of being copied into both. ``create_app`` builds
the ASGI app (usable in-process with an ASGI transport); ``server.serve`` runs it on a socket.
Module map: ``protocol`` envelopes and auth, ``validation`` request bodies, ``pipe_bodies`` and
``create`` the pipe lifecycle bodies and create rules, ``lifecycle`` pipe states, ``store`` data
and update semantics, ``seed`` demo and scale data, ``faults`` latency/faults/rate limit, ``app``
API routes, ``admin`` test-only paths, ``pipeline`` the request pipeline, ``server`` start-up.
"""

from reconciler.emulator.faults import EmulatorConfig, parse_rate_limit
from reconciler.emulator.pipeline import ConnectionDropped, EmulatorApp, Runtime, create_app
from reconciler.emulator.protocol import DEMO_ORG_ID, OTHER_ORG_ID, Identities, Identity

__all__ = [
    "DEMO_ORG_ID",
    "OTHER_ORG_ID",
    "ConnectionDropped",
    "EmulatorApp",
    "EmulatorConfig",
    "Identities",
    "Identity",
    "Runtime",
    "create_app",
    "parse_rate_limit",
]
