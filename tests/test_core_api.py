"""The public Python API (``reconciler.compute_plan``, ``reconciler.apply_plan``) that the CLI
itself calls, driven in-process against the emulator app through ``httpx.ASGITransport``:
confirmation through a callback, nothing sent when it declines, convergence, stale saved plans,
the new-state guard, and a lazy, deliberate ``__all__``."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

import reconciler
from reconciler.emulator import EmulatorApp
from reconciler.plan.actions import Plan
from reconciler.plan.run import ProgressBar, no_progress
from tests.support.asgi import config, emulator_app
from tests.support.manifests import EXAMPLES, set_example_secrets
from tests.support.seed_ids import ANALYTICS, KAFKA_PIPE, ORG_ID

MANIFESTS = EXAMPLES


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    set_example_secrets(monkeypatch)


def _scope(tmp_path: Path) -> reconciler.Scope:
    return reconciler.Scope(paths=(str(MANIFESTS),), state=str(tmp_path / "state.json"))


def _writes(app: EmulatorApp) -> list[str]:
    return [f"{e['method']} {e['path']}" for e in app.runtime.log if e["method"] != "GET"]


def _plan(app: EmulatorApp, scope: reconciler.Scope) -> reconciler.PlanResult:
    transport = httpx.ASGITransport(app=app)
    return asyncio.run(reconciler.compute_plan(config(), scope, transport=transport))


def _apply(
    app: EmulatorApp, request: reconciler.ApplyRequest, hooks: reconciler.ApplyHooks
) -> reconciler.ApplyResult:
    transport = httpx.ASGITransport(app=app)
    return asyncio.run(reconciler.apply_plan(config(), request, hooks, transport=transport))


def test_apply_with_auto_approve_converges_and_a_second_plan_has_no_changes(
    tmp_path: Path,
) -> None:
    app = emulator_app()
    scope = _scope(tmp_path)
    shown: list[Plan] = []
    hooks = reconciler.ApplyHooks(confirm=reconciler.AUTO_APPROVE, show_plan=shown.append)
    result = _apply(app, reconciler.ApplyRequest(scope), hooks)
    assert result.status is reconciler.ApplyStatus.APPLIED and not result.failed
    assert len(shown) == 1 and shown[0].changed
    again = _plan(app, scope).plan
    assert (again.changed, again.failed) == ((), ())


def test_a_declined_confirmation_sends_nothing(tmp_path: Path) -> None:
    app = emulator_app()
    asked: list[int] = []

    def decline(plan: Plan) -> bool:
        asked.append(len(plan.changed))
        return False

    result = _apply(app, reconciler.ApplyRequest(_scope(tmp_path)), reconciler.ApplyHooks(decline))
    assert result.status is reconciler.ApplyStatus.CANCELLED and result.failed
    assert asked and asked[0] > 0
    assert _writes(app) == []


def test_nothing_to_apply_never_asks_for_confirmation(tmp_path: Path) -> None:
    app = emulator_app()
    scope = _scope(tmp_path)
    _apply(app, reconciler.ApplyRequest(scope), reconciler.ApplyHooks(reconciler.AUTO_APPROVE))

    def refuse(plan: Plan) -> bool:
        raise AssertionError("confirm called with nothing to apply")

    result = _apply(app, reconciler.ApplyRequest(scope), reconciler.ApplyHooks(refuse))
    assert result.status is reconciler.ApplyStatus.NOTHING_TO_APPLY and not result.failed


def test_a_saved_plan_whose_live_object_moved_is_refused_as_stale(tmp_path: Path) -> None:
    app = emulator_app()
    scope = _scope(tmp_path)
    computed = _plan(app, scope)
    saved = tmp_path / "plan.json"
    reconciler.save_plan(computed, saved)
    moved = asyncio.run(_move_kafka_pipe(app))
    assert moved == 200
    before = _writes(app)
    request = reconciler.ApplyRequest(scope, saved_plan=reconciler.load_plan(saved))
    result = _apply(app, request, reconciler.ApplyHooks(reconciler.AUTO_APPROVE))
    assert result.status is reconciler.ApplyStatus.STALE and result.failed
    assert any("Pipe/orders" in key for key in result.stale)
    assert _writes(app) == before


async def _move_kafka_pipe(app: EmulatorApp) -> int:
    path = f"/v1/organizations/{ORG_ID}/services/{ANALYTICS}/pipes/{KAFKA_PIPE}"
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://127.0.0.1",
        auth=("demo-key-id", "demo-key-secret"),
    ) as http:
        response = await http.patch(path, json={"settings": {"engine_max_threads": 2}})
    return response.status_code


def test_bad_credentials_are_reported_before_any_request_and_manifest_errors_first(
    tmp_path: Path,
) -> None:
    app = emulator_app()
    scope = _scope(tmp_path)
    with pytest.raises(reconciler.ConfigError, match="no API credentials"):
        asyncio.run(reconciler.compute_plan(replace(config(), key_id=""), scope))
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: reconcile/v1\nkind: Pipe\nmetadata: {name: x}\nspec: {}\n")
    with pytest.raises(reconciler.ManifestErrors):
        asyncio.run(
            reconciler.compute_plan(
                replace(config(), key_id=""), replace(scope, paths=(str(broken),))
            )
        )
    assert app.runtime.log == []


def test_every_public_name_resolves_and_import_stays_light() -> None:
    for name in reconciler.__all__:
        assert getattr(reconciler, name) is not None
    assert "plan" not in reconciler.__all__ and "apply" not in reconciler.__all__
    code = "import sys, reconciler; print('httpx' in sys.modules, 'click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_plan_should_leave_the_cyclic_collector_running_with_nothing_frozen(
    tmp_path: Path,
) -> None:
    seen: list[tuple[bool, int]] = []

    def progress(description: str, total: int | None = None, unit: str = "req") -> ProgressBar:
        # Called once the manifests are loaded, as the live state starts to be read.
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return no_progress(description, total, unit)

    transport = httpx.ASGITransport(app=emulator_app())
    scope = _scope(tmp_path)
    run = reconciler.compute_plan(config(), scope, progress=progress, transport=transport)
    assert asyncio.run(run).plan.changed
    assert seen and set(seen) == {(True, 0)}


def test_reading_the_manifests_ahead_should_still_plan_the_same_with_a_deprecation_warning(
    tmp_path: Path,
) -> None:
    app = emulator_app()
    scope = _scope(tmp_path)

    def summary(plan: Plan) -> list[tuple[str, str, str]]:
        return [(a.kind, a.name, a.operation) for a in plan.actions]

    expected = summary(_plan(app, scope).plan)
    with pytest.warns(DeprecationWarning, match="start_reading"), scope.start_reading() as reading:
        transport = httpx.ASGITransport(app=app)
        run = reconciler.compute_plan(config(), scope, transport=transport, reading=reading)
        assert summary(asyncio.run(run).plan) == expected != []
