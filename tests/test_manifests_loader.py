"""Loading valid manifests: resources, lazy locations, normalisation, defaults, file discovery.

Covers ``load_resources`` and ``find_manifest_files`` on valid input: what a ``Resource``
holds (plain JSON spec, secret references untouched), the locator's line/col for nested
paths, list items and absent paths (nearest parent), integral floats turned into ints where
the schema says integer, the default organization, sorting, and a large multi-document file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.load.manifestfiles import find_manifest_files
from reconciler.load.manifests import load_resources
from reconciler.model.errors import Location, ManifestErrors
from tests.support.manifests import (
    DASHBOARD,
    KAFKA_PIPE,
    ORG,
    ORGANIZATION,
    PIPE,
    replace_line,
    write,
)


def test_load_should_return_resource_with_plain_spec_and_secret_references(tmp_path: Path) -> None:
    path = write(tmp_path, "orders.yaml", KAFKA_PIPE)
    [resource] = load_resources([path])
    assert (resource.kind, resource.name, resource.index) == ("Pipe", "orders", 0)
    assert resource.file == path.as_posix()
    assert resource.spec["source"]["kafka"]["credentials"] == {
        "username": {"fromEnv": "KAFKA_USER"},
        "password": {"fromFile": "secrets/kafka-password"},
    }
    assert json.loads(json.dumps(resource.spec)) == resource.spec


def test_load_should_keep_relative_file_names_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "m/pipes/orders.yaml", KAFKA_PIPE)
    [resource] = load_resources(["m"])
    assert resource.file == "m/pipes/orders.yaml"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ((), (1, 1)),
        (("spec",), (5, 1)),
        (("spec", "settings", "engine_max_threads"), (18, 5)),
        (("spec", "source", "kafka", "credentials", "password"), (13, 9)),
        (("spec", "source", "kafka", "credentials", "password", "fromFile"), (13, 20)),
        (("spec", "source", "kafka", "reversePrivateEndpointIds", 0), (15, 11)),
        (("spec", "settings", "engine_max_download_threads"), (16, 3)),
        (("spec", "source", "kafka", "reversePrivateEndpointIds", 7), (14, 7)),
        (("spec", "nothing", "deeper"), (5, 1)),
    ],
)
def test_locator_should_give_line_and_col_of_path_or_nearest_parent(
    tmp_path: Path, path: tuple[str | int, ...], expected: tuple[int, int]
) -> None:
    file = write(tmp_path, "orders.yaml", KAFKA_PIPE)
    [resource] = load_resources([file])
    assert resource.locate(*path) == Location(file.as_posix(), *expected)


def test_locator_should_locate_each_document_of_a_multi_document_file(tmp_path: Path) -> None:
    file = write(tmp_path, "all.yaml", KAFKA_PIPE + "---\n" + ORGANIZATION + "---\n" + DASHBOARD)
    pipe, org, dash = load_resources([file])
    assert [r.index for r in (pipe, org, dash)] == [0, 1, 2]
    assert org.locate_spec("privateEndpoints", 0, "description") == Location(
        file.as_posix(), 19 + 9, 29
    )
    assert dash.locate_spec("tiles", 0, "series", 0, "type") == Location(
        file.as_posix(), 19 + 10 + 8, 57
    )


def test_load_should_normalise_integral_floats_where_schema_says_integer(tmp_path: Path) -> None:
    text = replace_line(KAFKA_PIPE, "wait_ms: 5000", "wait_ms: 5000.0")
    text = text.replace(
        "  settings:", "  scaling: {replicas: 2.0, replicaMemoryGb: 2.0}\n  settings:"
    )
    [resource] = load_resources([write(tmp_path, "m.yaml", text)])
    wait = resource.spec["settings"]["streaming_max_insert_wait_ms"]
    assert wait == 5000 and type(wait) is int
    assert type(resource.spec["scaling"]["replicas"]) is int
    assert type(resource.spec["scaling"]["replicaMemoryGb"]) is float


def test_load_should_fill_organization_from_default_for_pipes_and_organizations(
    tmp_path: Path,
) -> None:
    other = "5d2f8e1a-6b3c-4d7e-9f0a-1b2c3d4e5f60"
    pipe = replace_line(KAFKA_PIPE, f"  organizationId: {ORG}\n", "")
    org = replace_line(ORGANIZATION, f"  organizationId: {ORG}\n", "")
    write(tmp_path, "a.yaml", pipe)
    write(tmp_path, "b.yaml", org)
    write(tmp_path, "c.yaml", KAFKA_PIPE.replace("name: orders", "name: explicit"))
    resources = load_resources([tmp_path], default_organization=other)
    assert [r.spec["organizationId"] for r in resources] == [other, other, ORG]


def test_load_should_sort_resources_by_file_then_document(tmp_path: Path) -> None:
    write(tmp_path, "z.yaml", DASHBOARD)
    write(tmp_path, "a/b.yml", KAFKA_PIPE + "---\n" + ORGANIZATION)
    keys = [(Path(r.file).name, r.index, r.key) for r in load_resources([tmp_path])]
    assert keys == [
        ("b.yml", 0, "Pipe/orders"),
        ("b.yml", 1, "Organization/acme"),
        ("z.yaml", 0, "Dashboard/overview"),
    ]


def test_find_manifest_files_should_search_recursively_sorted_and_skip_hidden(
    tmp_path: Path,
) -> None:
    for name in ["b.yaml", "a/c.yml", "a/notes.txt", ".hidden/x.yaml", "a/.y.yaml"]:
        write(tmp_path, name, DASHBOARD)
    given = write(tmp_path, "single.yaml", DASHBOARD)
    files = find_manifest_files([tmp_path / "a", tmp_path / "b.yaml", given, given])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "a/c.yml",
        "b.yaml",
        "single.yaml",
    ]
    with pytest.raises(ManifestErrors):
        find_manifest_files([tmp_path / "missing"])


@pytest.mark.parametrize(
    "given", [".", "./", "m", "./m", "m/", "m/./deep/..", "m//deep", "ABS", "m/deep/d.yaml"]
)
def test_file_names_should_be_the_paths_as_pathlib_prints_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # Discovery builds names from plain strings (fast for 10,000 files); they must equal
    # what Path(root) / name would print, as the names in every message did before.
    monkeypatch.chdir(tmp_path)
    for name in ["m/a.yaml", "m/deep/d.yaml", "m/deep/er/e.yml", "top.yaml"]:
        stem = Path(name).stem
        write(tmp_path, name, DASHBOARD.replace("overview", stem).replace("Overview", stem.upper()))
    target = str(tmp_path / "m") if given == "ABS" else given
    reference = (
        sorted(
            (p for p in Path(target).rglob("*") if p.suffix in (".yaml", ".yml")),
            key=lambda p: p.as_posix(),
        )
        if Path(target).is_dir()
        else [Path(target)]
    )
    assert find_manifest_files([target]) == reference
    assert [r.file for r in load_resources([target])] == [p.as_posix() for p in reference]


def test_load_should_skip_empty_documents_between_separators(tmp_path: Path) -> None:
    file = write(tmp_path, "m.yaml", "---\n---\n" + KAFKA_PIPE + "---\n---\n")
    [resource] = load_resources([file])
    assert resource.index == 1
    assert resource.locate("kind") == Location(file.as_posix(), 4, 1)


def test_load_should_handle_large_multi_document_file(tmp_path: Path) -> None:
    docs = [
        KAFKA_PIPE.replace("name: orders", f"name: pipe-{i}").replace(PIPE, PIPE[:-3] + f"{i:03x}")
        for i in range(400)
    ]
    docs[311] = replace_line(docs[311], "engine_max_threads: 4", "engine_max_threads: 65")
    file = write(tmp_path, "many.yaml", "---\n".join(docs))
    with pytest.raises(ManifestErrors) as info:
        load_resources([file])
    [error] = info.value.errors
    lines_per_doc = KAFKA_PIPE.count("\n") + 1
    assert error.location.line == 311 * lines_per_doc + 18
    assert error.path == "spec.settings.engine_max_threads"
    docs[311] = (
        docs[0]
        .replace("name: pipe-0", "name: pipe-311")
        .replace(PIPE[:-3] + "000", PIPE[:-3] + f"{311:03x}")
    )
    write(tmp_path, "many.yaml", "---\n".join(docs))
    assert len(load_resources([file])) == 400


def test_load_should_support_anchors_and_merge_keys(tmp_path: Path) -> None:
    text = KAFKA_PIPE.replace(
        "  settings:\n    streaming_max_insert_wait_ms: 5000\n",
        "  settings:\n    <<: &base {streaming_max_insert_wait_ms: 5000, engine_max_threads: 2}\n",
    )
    [resource] = load_resources([write(tmp_path, "m.yaml", text)])
    assert resource.spec["settings"] == {
        "streaming_max_insert_wait_ms": 5000,
        "engine_max_threads": 4,
    }


def test_plan_loading_should_record_only_name_positions_and_find_the_rest_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("reconciler.load.manifests.FULL_POSITIONS", 0)  # as with 10,000 files
    path = write(tmp_path, "orders.yaml", KAFKA_PIPE)
    plain = load_resources([path])[0]
    [resource] = load_resources([path], positions=True)
    source = resource.locator.source  # type: ignore[attr-defined]
    assert source.data == b""  # the bytes are read again only if a position is needed
    assert resource.locate("metadata", "name") == plain.locate("metadata", "name")
    assert source._index is None  # the name came from the marks: no full position map
    deep = ("source", "kafka", "credentials", "username")
    assert resource.locate_spec(*deep) == plain.locate_spec(*deep)
    assert source._index is not None  # built on demand, for this file only
    resource.locator.release()  # type: ignore[attr-defined]
    assert source._index is None
    assert resource.locate_spec(*deep) == plain.locate_spec(*deep)


def test_plan_loading_of_a_few_files_should_record_every_position_in_one_parse(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "orders.yaml", KAFKA_PIPE)
    [resource] = load_resources([path], positions=True)
    assert resource.locator.source._index is not None  # type: ignore[attr-defined]


def test_a_manifest_changed_after_loading_should_lose_its_deep_positions_not_give_wrong_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("reconciler.load.manifests.FULL_POSITIONS", 0)
    path = write(tmp_path, "orders.yaml", KAFKA_PIPE)
    [resource] = load_resources([path], positions=True)
    path.write_text("# moved\n" + KAFKA_PIPE, encoding="utf-8")
    name = resource.locate("metadata", "name")  # recorded while parsing: still exact
    assert name.line > 1
    assert resource.locate_spec("source", "kafka", "brokers") == Location(path.as_posix(), 1, 1)


def test_a_directory_walk_skips_the_project_file_so_validate_dot_works_at_the_project_root(
    tmp_path: Path,
) -> None:
    # Acceptance finding: `reconcile validate .` at a project root read reconcile.yaml (the
    # project file) as a manifest and failed with "missing required field 'apiVersion'".
    (tmp_path / "reconcile.yaml").write_text("manifests: [m]\n")
    write(tmp_path / "m", "orders.yaml", KAFKA_PIPE)
    nested = tmp_path / "m" / "reconcile.yaml"
    nested.write_text("manifests: [.]\n")
    assert find_manifest_files([tmp_path]) == [tmp_path / "m" / "orders.yaml"]
    # Named explicitly, it is read (and reported) like any file.
    assert find_manifest_files([nested]) == [nested]
