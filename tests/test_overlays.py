"""Overlays: how an environment's patches merge into base manifests, and where errors point.

Table-driven: each case writes base manifests and one environment's overlay files into a
temporary directory, loads them with ``load_layered`` (from that directory, so file names
stay relative) and checks either the merged spec or the exact ``file:line:col`` error lines —
the overlay's position when the overlay wrote the value, the base's otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconciler.load.overlays import Effective, Layering, load_environment, load_layered, merge
from reconciler.model.errors import ManifestErrors
from tests.support.manifests import DASHBOARD, KAFKA_PIPE, ORGANIZATION, write

BASE = {"base/pipe.yaml": KAFKA_PIPE, "base/org.yaml": ORGANIZATION, "base/dash.yaml": DASHBOARD}

PATCH_HEAD = "kind: {kind}\nmetadata:\n  name: {name}\n"


def patch(kind: str, name: str, body: str) -> str:
    """Return an overlay document patching ``kind/name`` (``body`` starts at line 4)."""
    return PATCH_HEAD.format(kind=kind, name=name) + body


MERGE_CASES: list[tuple[str, dict[str, str], tuple[str, ...], Callable[[dict[str, Any]], None]]] = [
    (
        "scalar_replaced_other_keys_kept",
        {"p.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: 8\n")},
        (),
        lambda r: (
            r["Pipe/orders"]["settings"]
            == {"streaming_max_insert_wait_ms": 5000, "engine_max_threads": 8}
            or pytest.fail(str(r["Pipe/orders"]["settings"]))
        ),
    ),
    (
        "list_replaced_whole",
        {
            "o.yaml": patch(
                "Organization",
                "acme",
                "spec:\n  privateEndpoints:\n    - {id: pe-ffffffffffff, description: staging}\n",
            )
        },
        (),
        lambda r: (
            r["Organization/acme"]["privateEndpoints"]
            == [{"id": "pe-ffffffffffff", "description": "staging"}]
            or pytest.fail(str(r))
        ),
    ),
    (
        "null_is_kept_as_reset_to_default",
        {"p.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: null\n")},
        (),
        lambda r: r["Pipe/orders"]["settings"]["engine_max_threads"] is None or pytest.fail(str(r)),
    ),
    (
        "nested_mapping_merged_secret_references_stay_references",
        {
            "p.yaml": patch(
                "Pipe",
                "orders",
                "spec:\n  source:\n    kafka:\n      credentials:\n"
                "        username: {fromEnv: STAGING_KAFKA_USER}\n",
            )
        },
        (),
        lambda r: (
            r["Pipe/orders"]["source"]["kafka"]["credentials"]
            == {
                "username": {"fromEnv": "STAGING_KAFKA_USER"},
                "password": {"fromFile": "secrets/kafka-password"},
            }
            or pytest.fail(str(r))
        ),
    ),
    (
        "complete_manifest_matching_nothing_is_added",
        {
            "d.yaml": DASHBOARD.replace("name: overview", "name: staging-only", 1).replace(
                "name: Overview", "name: Staging only"
            )
        },
        (),
        lambda r: (
            sorted(r)
            == ["Dashboard/overview", "Dashboard/staging-only", "Organization/acme", "Pipe/orders"]
            or pytest.fail(str(sorted(r)))
        ),
    ),
    (
        "exclude_glob_drops_base_resources",
        {},
        ("Dashboard/*",),
        lambda r: sorted(r) == ["Organization/acme", "Pipe/orders"] or pytest.fail(str(r)),
    ),
    (
        "excluded_then_added_complete_replaces_it",
        {"d.yaml": DASHBOARD.replace("name: Overview", "name: Staging overview")},
        ("Dashboard/overview",),
        lambda r: r["Dashboard/overview"]["name"] == "Staging overview" or pytest.fail(str(r)),
    ),
    (
        "patches_apply_in_file_order",
        {
            "1.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: 8\n"),
            "2.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: 16\n"),
        },
        (),
        lambda r: r["Pipe/orders"]["settings"]["engine_max_threads"] == 16 or pytest.fail(str(r)),
    ),
]


def _load(tmp_path: Path, overlay: dict[str, str], exclude: tuple[str, ...]) -> list[Effective]:
    for name, text in BASE.items():
        write(tmp_path, name, text)
    for name, text in overlay.items():
        write(tmp_path, f"overlays/staging/{name}", text)
    if not overlay:
        (tmp_path / "overlays/staging").mkdir(parents=True)
        write(tmp_path, "overlays/staging/empty.yaml", patch("Pipe", "orders", "spec: {}\n"))
    layering = Layering(("overlays/staging",), exclude, "reconcile.yaml:12")
    return load_layered(["base"], layering)


@pytest.mark.parametrize(
    ("overlay", "exclude", "check"),
    [case[1:] for case in MERGE_CASES],
    ids=[case[0] for case in MERGE_CASES],
)
def test_overlay_merges(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    overlay: dict[str, str],
    exclude: tuple[str, ...],
    check: Callable[[dict[str, Any]], None],
) -> None:
    monkeypatch.chdir(tmp_path)
    effective = _load(tmp_path, overlay, exclude)
    check({e.key: e.resource.spec for e in effective})


ERROR_CASES: list[tuple[str, dict[str, str], tuple[str, ...], list[str]]] = [
    (
        "value_set_by_overlay_is_located_in_the_overlay",
        {
            "p.yaml": patch(
                "Pipe", "orders", "spec:\n  settings:\n    streaming_max_insert_wait_ms: 70000\n"
            )
        },
        (),
        [
            "overlays/staging/p.yaml:6:5: spec.settings.streaming_max_insert_wait_ms:"
            " 70000 is greater than the maximum of 60000"
        ],
    ),
    (
        "null_on_a_required_field_is_located_in_the_overlay",
        {"d.yaml": patch("Dashboard", "overview", "spec:\n  name: null\n")},
        (),
        ["overlays/staging/d.yaml:5:3: spec.name: expected a string, got null"],
    ),
    (
        "partial_manifest_matching_nothing_is_an_error_with_a_suggestion",
        {"d.yaml": patch("Dashboard", "overveiw", "spec:\n  name: Staging\n")},
        (),
        [
            "overlays/staging/d.yaml:3:3: metadata.name: Dashboard/overveiw patches no base "
            "manifest (did you mean Dashboard/overview?); to add it to this environment "
            "instead, write it as a complete manifest (with apiVersion)"
        ],
    ),
    (
        "exclude_matching_nothing_names_the_project_file",
        {},
        ("Pipe/order",),
        [
            "reconcile.yaml:12: exclude: 'Pipe/order' matches no base manifest (did you mean "
            "Pipe/orders?): remove it, or fix the Kind/name glob"
        ],
    ),
    (
        "exclude_glob_matching_nothing_is_no_error_but_a_plain_name_is",
        {},
        ("Dashboard/scratch-*", "Organization/acme", "Dashboard/gone"),
        [
            "reconcile.yaml:12: exclude: 'Dashboard/gone' matches no base manifest: remove it, or "
            "fix the Kind/name glob"
        ],
    ),
    (
        "patch_of_an_excluded_resource",
        {"p.yaml": patch("Pipe", "orders", "spec: {}\n")},
        ("Pipe/orders",),
        [
            "overlays/staging/p.yaml:3:3: metadata.name: Pipe/orders is excluded in this "
            "environment (exclude at reconcile.yaml:12), so this patch applies to nothing: "
            "remove the patch or the exclude"
        ],
    ),
    (
        "overlay_document_without_a_name",
        {"x.yaml": "kind: Pipe\nspec: {}\n"},
        (),
        [
            "overlays/staging/x.yaml:1:1: an overlay document needs kind and metadata.name "
            "(the manifest it patches, or the one it adds)"
        ],
    ),
    (
        "added_manifest_errors_are_its_own",
        {"d.yaml": DASHBOARD.replace("name: overview", "name: second").replace("w: 12", "w: 99")},
        (),
        ["overlays/staging/d.yaml:8:34: spec.tiles[0].w: 99 is greater than the maximum of 24"],
    ),
    (
        "added_manifest_with_a_near_name_and_an_error_says_it_matched_nothing",
        {"d.yaml": DASHBOARD.replace("name: overview", "name: overveiw").replace("w: 12", "w: 99")},
        (),
        [
            "overlays/staging/d.yaml:4:3: metadata.name: Dashboard/overveiw matches no base "
            "manifest (did you mean Dashboard/overview?), so it is read as a manifest of its own",
            "overlays/staging/d.yaml:8:34: spec.tiles[0].w: 99 is greater than the maximum of 24",
        ],
    ),
    (
        "two_manifests_for_one_dashboard_point_at_the_overlay",
        {"d.yaml": DASHBOARD.replace("name: overview", "name: second")},
        (),
        [
            "overlays/staging/d.yaml:6:3: spec.name: dashboard named 'Overview' is also "
            "addressed by Dashboard/overview at base/dash.yaml:6:3: two manifests must not "
            "manage one live object"
        ],
    ),
]


@pytest.mark.parametrize(
    ("overlay", "exclude", "expected"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_overlay_errors_name_where_the_value_was_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    overlay: dict[str, str],
    exclude: tuple[str, ...],
    expected: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ManifestErrors) as caught:
        _load(tmp_path, overlay, exclude)
    assert [str(e) for e in caught.value.errors] == expected


def test_merged_locator_points_each_field_at_the_layer_that_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    overlay = {"p.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: 8\n")}
    effective = {e.key: e for e in _load(tmp_path, overlay, ())}
    pipe = effective["Pipe/orders"]
    assert pipe.files == ("base/pipe.yaml", "overlays/staging/p.yaml")
    assert str(pipe.resource.locate_spec("settings", "engine_max_threads")) == (
        "overlays/staging/p.yaml:6:5"
    )
    assert str(pipe.resource.locate_spec("settings", "streaming_max_insert_wait_ms")) == (
        "base/pipe.yaml:17:5"
    )
    assert pipe.resource.file == "base/pipe.yaml"
    assert effective["Organization/acme"].files == ("base/org.yaml",)


def test_the_written_document_is_rendered_before_defaults_and_keeps_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    effective = {e.key: e for e in _load(tmp_path, {}, ())}
    doc = effective["Pipe/orders"].document
    assert doc["spec"]["source"]["kafka"]["credentials"]["username"] == {"fromEnv": "KAFKA_USER"}
    assert list(doc) == ["apiVersion", "kind", "metadata", "spec"]


def test_load_environment_with_layering_is_the_planning_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _load(tmp_path, {}, ())
    resources = load_environment(["base"], layering=Layering(exclude=("Organization/*",)))
    assert sorted(r.key for r in resources) == ["Dashboard/overview", "Pipe/orders"]


@pytest.mark.parametrize(
    ("base", "patch_", "merged", "origins"),
    [
        ({"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, {("b", "d")}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, {("a",)}),
        ({"a": {"x": 1}}, {"a": None}, {"a": None}, {("a",)}),
        ({"a": 1}, {"a": {"x": 1}}, {"a": {"x": 1}}, {("a",)}),
        ({"p": {"fromEnv": "A"}}, {"p": {"fromFile": "b"}}, {"p": {"fromFile": "b"}}, {("p",)}),
        ({"k": "Pipe", "n": 1}, {"k": "Pipe"}, {"k": "Pipe", "n": 1}, set()),
    ],
    ids=[
        "mapping_merged",
        "list_replaced",
        "null_replaces_mapping",
        "mapping_replaces_scalar",
        "secret_reference_replaced_whole",
        "restated_value_keeps_its_origin",
    ],
)
def test_merge_rules(
    base: dict[str, Any], patch_: dict[str, Any], merged: dict[str, Any], origins: set[Any]
) -> None:
    recorded: dict[Any, int] = {}
    before = repr(base)
    assert merge(base, patch_, recorded, 1) == merged
    assert set(recorded) == origins
    assert repr(base) == before  # the base is not changed


def test_a_restated_name_keeps_the_base_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    overlay = {"p.yaml": patch("Pipe", "orders", "spec:\n  settings:\n    engine_max_threads: 8\n")}
    pipe = {e.key: e for e in _load(tmp_path, overlay, ())}["Pipe/orders"]
    assert str(pipe.resource.locate("metadata", "name")) == "base/pipe.yaml:4:3"


def test_a_secret_file_an_overlay_names_is_read_beside_the_overlay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reconciler.model.secrets import resolve_tree

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKA_USER", "user")
    write(tmp_path, "overlays/staging/secrets/kafka-password", "staging-password\n")
    write(tmp_path, "base/secrets/kafka-password", "base-password\n")
    overlay = {
        "p.yaml": patch(
            "Pipe",
            "orders",
            "spec:\n  source:\n    kafka:\n      credentials:\n"
            "        password: {fromFile: secrets/kafka-password}\n",
        )
    }
    pipe = {e.key: e for e in _load(tmp_path, overlay, ())}["Pipe/orders"].resource
    path = ("source", "kafka", "credentials")
    resolved = resolve_tree(pipe, path, pipe.spec["source"]["kafka"]["credentials"])
    assert resolved["password"].reveal() == "staging-password"


def test_an_empty_overlay_directory_is_no_patch_and_a_missing_one_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in BASE.items():
        write(tmp_path, name, text)
    (tmp_path / "overlays" / "empty").mkdir(parents=True)
    assert len(load_layered(["base"], Layering(("overlays/empty",)))) == 3
    with pytest.raises(ManifestErrors) as caught:
        load_layered(["base"], Layering(("overlays/typo",), overlays_at="reconcile.yaml:9"))
    assert [str(e) for e in caught.value.errors] == [
        "overlays/typo: no such file or directory (an overlay named at reconcile.yaml:9)"
    ]
