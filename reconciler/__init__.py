"""reconcile: keep a cloud database organization equal to YAML manifests.

The Python API is the one the command line itself uses — each command parses its options,
makes one of these calls and renders the result::

    import asyncio
    import reconciler

    config = reconciler.ApiConfig(base_url=..., key_id=..., key_secret=...,
                                  dashboards_url=..., dashboards_token=...)
    scope = reconciler.Scope(paths=("manifests",), state=".reconcile/state.json",
                             organization=...)  # for manifests without spec.organizationId
    result = asyncio.run(reconciler.compute_plan(config, scope))
    print(reconciler.render_text(result.plan))
    applied = asyncio.run(reconciler.apply_plan(
        config, reconciler.ApplyRequest(scope), reconciler.ApplyHooks(confirm=reconciler.AUTO_APPROVE)))
    assert not applied.failed

- ``load_manifests(paths)``: validated resources (raises ``ManifestErrors`` with every problem);
- ``compute_plan(config, scope, options)``: the plan and the state it was computed against;
- ``apply_plan(config, request, hooks)``: plan (or take a saved plan), confirm, apply, verify;
  ``ApplyRequest(wait=WaitOptions(...))`` says how it waits for pipes after state commands and
  creates, ``ApplyHooks(waiting=...)`` receives the pipes still waited for (``Waiting``);
- ``save_plan`` / ``load_plan``: the redacted plan file of ``plan --out`` / ``apply --plan``;
- ``resolve_settings(explicit, environment=…)``: the project file, env files and variables as
  ``Settings`` (each value with its source; ``.api_config()``, ``.scope()``, ``.reload()``),
  and ``list_environments()``: what ``reconcile config`` shows, for a Python caller;
- ``load_layered(paths, Layering(overlays, exclude))``: an environment's effective manifests
  (``Effective``: the merged document, its source files, its ``Resource``), which
  ``compare_effective`` compares and ``render_effective`` prints; ``compute_plans(targets)``:
  one plan per environment (``plan --all-envs``), environments on different keys concurrently.

Every error is a ``ReconcileError``. Its branches: ``ManifestErrors`` (every problem of the
manifests, each with file, line and field), ``ApiError`` (a request the server refused or that
could not complete: ``BadRequest``, ``NotFound``, ``AuthError``, ``RateLimited``,
``ServerError``, ``Unsupported``, ``NotSent``, …), ``ServiceUnreachable`` (the first request
never reached a server), ``InterfaceDown`` (an interface given up mid-run: its retry budget
spent, or its connections refused after it had answered), ``Interrupted``, ``PlanError``,
``StateError`` and ``ConfigError``. ``AuthError`` is the one auth branch: a refused
credential that stops the whole run is its subclass
``AuthenticationFailed``, so ``except AuthError`` sees every refusal. Names are imported
lazily, so ``import reconciler`` stays cheap for the command line.

Layout: one folder per stage of the data flow, each importing only downwards (checked by
import-linter, ``make lint``):

- ``model``: shared vocabulary (resources, field rules, the secret-field list, errors);
- ``load``: manifests from YAML, validated against the JSON Schemas;
- ``client``: the one HTTP client, its request budget, the path builder and the read layer;
- ``state``: what the API cannot tell us, and the backends that keep it;
- ``plan``: pure diff and planners, the immutable plan, the engine, rendering, the plan file;
- ``apply``: ``apply_plan``: walks a plan's actions and verifies every answer;
- ``inventory``: read-only views (``get``, ``export``, ``check backups``);
- ``settings`` and ``metrics``: the resolved settings of a run, and its Prometheus metrics;
- ``cli``: click only — parse options, call one core function, render.

The ``emulator`` package is a separate implementation of the server and shares no code with
the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconciler.apply.results import ActionResult, Outcome
    from reconciler.apply.run import (
        AUTO_APPROVE,
        ApplyHooks,
        ApplyRequest,
        ApplyResult,
        ApplyStatus,
        apply_plan,
    )
    from reconciler.apply.waiting import Waiting, WaitOptions
    from reconciler.client.api import ApiConfig
    from reconciler.load.effective import compare as compare_effective
    from reconciler.load.effective import render_yaml as render_effective
    from reconciler.load.manifests import load_manifests
    from reconciler.load.overlays import Effective, Layering, load_layered
    from reconciler.model.apierrors import (
        ApiError,
        AuthenticationFailed,
        AuthError,
        InterfaceDown,
        NotFound,
        NotSent,
        RateLimited,
        ServiceUnreachable,
        Unsupported,
    )
    from reconciler.model.errors import (
        ConfigError,
        ManifestErrors,
        PlanError,
        ReconcileError,
        StateError,
    )
    from reconciler.model.resources import Resource
    from reconciler.plan.actions import Action, Op, Plan
    from reconciler.plan.compute import PlanOptions
    from reconciler.plan.environments import Target as PlanTarget
    from reconciler.plan.environments import compute_plans
    from reconciler.plan.planfile import load as load_plan
    from reconciler.plan.render import render_markdown, render_text
    from reconciler.plan.run import PlanResult, compute_plan, save_plan
    from reconciler.plan.scope import Scope
    from reconciler.settings import Settings, list_environments
    from reconciler.settings import resolve as resolve_settings

# name -> (module, attribute): resolved on first use (PEP 562).
_EXPORTS: dict[str, tuple[str, str]] = {
    "AUTO_APPROVE": ("reconciler.apply.run", "AUTO_APPROVE"),
    "ActionResult": ("reconciler.apply.results", "ActionResult"),
    "Action": ("reconciler.plan.actions", "Action"),
    "ApiConfig": ("reconciler.client.api", "ApiConfig"),
    "ApiError": ("reconciler.model.apierrors", "ApiError"),
    "ApplyHooks": ("reconciler.apply.run", "ApplyHooks"),
    "ApplyRequest": ("reconciler.apply.run", "ApplyRequest"),
    "ApplyResult": ("reconciler.apply.run", "ApplyResult"),
    "ApplyStatus": ("reconciler.apply.run", "ApplyStatus"),
    "AuthError": ("reconciler.model.apierrors", "AuthError"),
    "AuthenticationFailed": ("reconciler.model.apierrors", "AuthenticationFailed"),
    "ConfigError": ("reconciler.model.errors", "ConfigError"),
    "ManifestErrors": ("reconciler.model.errors", "ManifestErrors"),
    "NotFound": ("reconciler.model.apierrors", "NotFound"),
    "Op": ("reconciler.plan.actions", "Op"),
    "Outcome": ("reconciler.apply.results", "Outcome"),
    "Plan": ("reconciler.plan.actions", "Plan"),
    "PlanError": ("reconciler.model.errors", "PlanError"),
    "PlanOptions": ("reconciler.plan.compute", "PlanOptions"),
    "PlanResult": ("reconciler.plan.run", "PlanResult"),
    "RateLimited": ("reconciler.model.apierrors", "RateLimited"),
    "ReconcileError": ("reconciler.model.errors", "ReconcileError"),
    "Resource": ("reconciler.model.resources", "Resource"),
    "Scope": ("reconciler.plan.scope", "Scope"),
    "ServiceUnreachable": ("reconciler.model.apierrors", "ServiceUnreachable"),
    "InterfaceDown": ("reconciler.model.apierrors", "InterfaceDown"),
    "NotSent": ("reconciler.model.apierrors", "NotSent"),
    "StateError": ("reconciler.model.errors", "StateError"),
    "Unsupported": ("reconciler.model.apierrors", "Unsupported"),
    "WaitOptions": ("reconciler.apply.waiting", "WaitOptions"),
    "Waiting": ("reconciler.apply.waiting", "Waiting"),
    "apply_plan": ("reconciler.apply.run", "apply_plan"),
    "compute_plan": ("reconciler.plan.run", "compute_plan"),
    "load_manifests": ("reconciler.load.manifests", "load_manifests"),
    "Layering": ("reconciler.load.overlays", "Layering"),
    "Effective": ("reconciler.load.overlays", "Effective"),
    "load_layered": ("reconciler.load.overlays", "load_layered"),
    "compare_effective": ("reconciler.load.effective", "compare"),
    "render_effective": ("reconciler.load.effective", "render_yaml"),
    "PlanTarget": ("reconciler.plan.environments", "Target"),
    "compute_plans": ("reconciler.plan.environments", "compute_plans"),
    "load_plan": ("reconciler.plan.planfile", "load"),
    "render_markdown": ("reconciler.plan.render", "render_markdown"),
    "render_text": ("reconciler.plan.render", "render_text"),
    "save_plan": ("reconciler.plan.run", "save_plan"),
    "Settings": ("reconciler.settings", "Settings"),
    "list_environments": ("reconciler.settings", "list_environments"),
    "resolve_settings": ("reconciler.settings", "resolve"),
}

__all__ = [
    "AUTO_APPROVE",
    "Action",
    "ActionResult",
    "ApiConfig",
    "ApiError",
    "ApplyHooks",
    "ApplyRequest",
    "ApplyResult",
    "ApplyStatus",
    "AuthError",
    "AuthenticationFailed",
    "ConfigError",
    "Effective",
    "InterfaceDown",
    "Layering",
    "ManifestErrors",
    "NotFound",
    "NotSent",
    "Op",
    "Outcome",
    "Plan",
    "PlanError",
    "PlanOptions",
    "PlanResult",
    "PlanTarget",
    "RateLimited",
    "ReconcileError",
    "Resource",
    "Scope",
    "ServiceUnreachable",
    "Settings",
    "StateError",
    "Unsupported",
    "WaitOptions",
    "Waiting",
    "__version__",
    "apply_plan",
    "compare_effective",
    "compute_plan",
    "compute_plans",
    "list_environments",
    "load_layered",
    "load_manifests",
    "load_plan",
    "render_effective",
    "render_markdown",
    "render_text",
    "resolve_settings",
    "save_plan",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use (the version is read from package metadata then)."""
    if name == "__version__":
        from reconciler.model.version import package_version

        return package_version()
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'reconciler' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
