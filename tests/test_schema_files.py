"""The JSON Schema files: valid Draft 2020-12, documented for editors, closed against typos.

Checks every schema against the 2020-12 meta-schema, that every property carries a title
or description (editor hover), that every object schema with properties is closed with
``additionalProperties: false`` (maps of labels excepted), that ``$ref``s resolve, and that
the service's bounds are encoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.load.schema import KIND_FILES, kind_schema, load_schemas


def _walk(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{where}/{i}")


@pytest.mark.parametrize("name", sorted(load_schemas()))
def test_schema_should_be_valid_draft_2020_12(name: str) -> None:
    schema = load_schemas()[name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == name


@pytest.mark.parametrize("name", sorted(load_schemas()))
def test_schema_properties_should_have_titles_or_descriptions(name: str) -> None:
    schemas = load_schemas()
    for where, node in _walk(schemas[name]):
        for prop, sub in node.get("properties", {}).items() if "properties" in node else []:
            # A bare reference (beside, at most, the field catalogue's annotation) is described
            # where it points.
            if isinstance(sub, dict) and "$ref" in sub and set(sub) <= {"$ref", "x-reconcile"}:
                target = sub["$ref"]
                file, _, pointer = target.partition("#")
                resolved: Any = schemas[file or name]
                for part in pointer.strip("/").split("/"):
                    resolved = resolved[part]
                sub = resolved
            assert "title" in sub or "description" in sub, f"{name}{where}/properties/{prop}"


@pytest.mark.parametrize("name", sorted(load_schemas()))
def test_object_schemas_should_be_closed_against_typos(name: str) -> None:
    for where, node in _walk(load_schemas()[name]):
        if "properties" in node and isinstance(node["properties"], dict):
            assert node.get("additionalProperties") is False, f"{name}{where}"


def test_every_kind_should_compile_to_the_fast_checker() -> None:
    for kind in KIND_FILES:
        compiled = kind_schema(kind)
        assert compiled.fast_check != compiled.validator.is_valid


def test_pipe_schema_should_encode_the_service_bounds() -> None:
    settings = load_schemas()["pipe.schema.json"]["$defs"]["settings"]["properties"]
    bounds = {k: (v.get("minimum"), v.get("maximum")) for k, v in settings.items()}
    assert bounds == {
        "streaming_max_insert_wait_ms": (500, 60000),
        "object_storage_concurrency": (1, 35),
        "object_storage_polling_interval_ms": (100, 3600000),
        "object_storage_max_insert_bytes": (10485760, 53687091200),
        "object_storage_max_file_count": (1, 10000),
        "engine_max_threads": (0, 64),
        "engine_max_insert_threads": (0, 16),
        "engine_min_insert_block_size_bytes": (0, 10737418240),
        "engine_max_download_threads": (0, 32),
        "engine_parallel_distributed_insert_select": (0, 2),
        "object_storage_use_cluster_function": (None, None),
        "engine_parallel_view_processing": (None, None),
    }
