"""A local emulator of the whole API: management (``/v1``) and dashboards (``/api/v2``).

It is a separate implementation of the server side and imports nothing from the rest of
``reconciler`` (only the standard library, starlette and uvicorn), so that a misreading of the
API on one side is caught by the other instead of being copied into both. ``create_app`` builds
the ASGI app (usable in-process with an ASGI transport); ``server.serve`` runs it on a socket.
Module map: ``protocol`` envelopes and auth, ``validation`` the body combinators,
``pipe_rules`` the rules and cross-field checks shared by pipe bodies, ``pipe_bodies`` and
``create`` the pipe create bodies and rules, ``patch_bodies`` the pipe PATCH body,
``databases`` the database source kinds, ``organization_bodies`` the organization PATCH and
dashboard bodies, ``lifecycle`` pipe states, ``store`` data, lookups and the organization and
dashboard updates, ``pipe_changes`` the changes to pipes (create, commands, PATCH semantics),
``reverse_endpoints``, ``cdc`` (CDC scaling) and ``discovery`` (schema discovery) the rest of
the pipe family, ``seed`` demo and scale data with ``seed_pipes`` its pipe records, ``faults``
latency/faults/rate limit, ``app`` API routes, ``handlers`` shared checks and the contract's
operations beyond the spec, ``admin`` test-only paths, ``pipeline`` the request pipeline,
``server`` start-up. What the emulator serves follows the real service's management contract
(every operation it lists, its bodies, bounds and nullability).
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
