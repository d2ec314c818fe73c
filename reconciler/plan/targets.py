"""Which resources a run covers: ``--target`` globs over ``Kind/name``.

``select_targets`` narrows the manifests a plan covers, ``select_actions`` the actions of a
saved plan that ``apply --plan --target`` applies; a target that matches nothing is an error.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Sequence

from reconciler.model.errors import ConfigError, suggest
from reconciler.model.resources import Resource
from reconciler.plan.actions import Plan

__all__ = ["select_actions"]


def matches_target(key: str, targets: Sequence[str]) -> bool:
    """Tell whether ``Kind/name`` matches any ``--target`` glob (kind case-insensitive)."""
    if not targets:
        return True
    kind, _, name = key.partition("/")
    for target in targets:
        t_kind, sep, t_name = target.partition("/")
        if not sep:
            t_kind, t_name = "*", target
        if fnmatch.fnmatchcase(kind.lower(), t_kind.lower()) and fnmatch.fnmatchcase(name, t_name):
            return True
    return False


def select_targets(resources: Sequence[Resource], targets: Sequence[str]) -> list[Resource]:
    """Return the resources a plan covers; a target matching nothing is an error."""
    if not targets:
        return list(resources)
    chosen = [r for r in resources if matches_target(r.key, targets)]
    for target in targets:
        if not any(matches_target(r.key, [target]) for r in resources):
            known = ", ".join(r.key for r in resources[:10])
            hint = suggest(target, _target_spellings(target, resources))
            raise ConfigError(
                f"--target {target} matches no resource{hint} (resources: {known}{', …' if len(resources) > 10 else ''})"
            )
    return chosen


def _target_spellings(target: str, resources: Sequence[Resource]) -> list[str]:
    """The addresses to compare a target with: ``Kind/name``, or bare names for a bare target."""
    if "/" in target:
        return [r.key for r in resources]
    return [r.name for r in resources]


def select_actions(plan: Plan, targets: Sequence[str]) -> Plan:
    """Return ``plan`` with only the actions ``targets`` match; a target matching none is an error.

    This is how ``apply --plan FILE --target …`` honours targets: the saved plan's other
    actions are neither sent nor reported.
    """
    if not targets:
        return plan
    for target in targets:
        if not any(matches_target(a.key, [target]) for a in plan.actions):
            known = ", ".join(a.key for a in plan.actions[:10])
            keys = [a.key if "/" in target else a.key.partition("/")[2] for a in plan.actions]
            raise ConfigError(
                f"--target {target} matches no action of the saved plan{suggest(target, keys)} "
                f"(actions: {known or 'none'})"
            )
    return dataclasses.replace(
        plan, actions=tuple(a for a in plan.actions if matches_target(a.key, targets))
    )
