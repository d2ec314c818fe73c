"""`reconcile fmt` (canonical style, comments and modeline kept, --check) and `reconcile explain`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.support.cli import run_cli
from tests.support.manifests import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
MESSY = """\
# yaml-language-server: $schema=../schemas/organization.schema.json
# The organization.
apiVersion: reconcile/v1
kind: Organization
metadata:
     name: acme   # keep me
spec:
  privateEndpoints:
  - id: e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51
    description: "quoted stays quoted"
"""
CANONICAL = """\
# yaml-language-server: $schema=../schemas/organization.schema.json
# The organization.
apiVersion: reconcile/v1
kind: Organization
metadata:
  name: acme      # keep me
spec:
  privateEndpoints:
    - id: e1a4c2d3-5b6f-4a7e-8d9c-0b1a2c3d4e51
      description: "quoted stays quoted"
"""


def test_fmt_check_fails_on_a_file_that_would_change_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(MESSY, encoding="utf-8")
    result = run_cli(["fmt", "--check", "--diff", str(tmp_path)], {})
    assert result.exit_code == 1
    assert f"would reformat {path}" in result.stdout
    assert "-     name: acme   # keep me" in result.stdout
    assert path.read_text(encoding="utf-8") == MESSY


def test_fmt_rewrites_canonically_keeping_comments_and_the_modeline_and_is_idempotent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(MESSY, encoding="utf-8")
    assert run_cli(["fmt", str(path)], {}).exit_code == 0
    assert path.read_text(encoding="utf-8") == CANONICAL
    again = run_cli(["fmt", "--check", str(path)], {})
    assert (
        again.exit_code == 0 and "0 files would be reformatted, 1 already formatted" in again.stdout
    )


def test_fmt_leaves_example_manifests_alone(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "m")
    result = run_cli(["fmt", "--check", str(tmp_path / "m")], {})
    assert result.exit_code == 0, result.output
    assert "0 files would be reformatted, 12 already formatted." in result.stdout


def test_fmt_refuses_yaml_that_is_not_a_manifest_as_validate_does(tmp_path: Path) -> None:
    """One rule for both hooks: every YAML file under the manifest paths is a manifest.

    Skipping such a file would let a manifest whose apiVersion or kind was mistyped drop
    silently out of every plan, so both commands refuse it at its first line.
    """
    shutil.copytree(EXAMPLES, tmp_path / "m")
    owners = tmp_path / "m" / "OWNERS.yaml"
    owners.write_text("owners: [alice, bob]\n", encoding="utf-8")
    fmt = run_cli(["fmt", "--check", str(tmp_path / "m")], {})
    validate = run_cli(["validate", str(tmp_path / "m")], {})
    assert fmt.exit_code == validate.exit_code == 1, fmt.output + validate.output
    assert f"{owners}:1:1: not a reconcile manifest" in fmt.stderr
    assert f"{owners}:1:1: missing required field 'apiVersion'" in validate.stdout
    assert run_cli(["fmt", str(owners)], {}).exit_code == 1
    assert owners.read_text() == "owners: [alice, bob]\n"


def test_fmt_reports_a_broken_file_at_its_line_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: reconcile/v1\nkind: [\n", encoding="utf-8")
    result = run_cli(["fmt", "--check", str(tmp_path)], {})
    assert result.exit_code == 1
    assert f"{tmp_path / 'bad.yaml'}:3:1:" in result.stderr


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "Pipe.spec.settings.engine_max_threads",
            [
                "TYPE:     integer",
                "BOUNDS:   ≥ 0, ≤ 64",
                "ACCESS:   writable: changed by the pipe update",
            ],
        ),
        ("pipe.settings.engine_max_threads", ["FIELD:    spec.settings.engine_max_threads"]),
        (
            "Pipe.spec.state",
            [
                "ACCESS:   desired state: Running and Stopped are reached with the state command",
                "VALUES:   Unknown, Provisioning",
            ],
        ),
        (
            "Pipe.spec.scaling.replicas",
            ["ACCESS:   writable: changed by the scaling request (PATCH …/scaling)"],
        ),
        (
            "Pipe.spec.source.kafka.credentials",
            [
                "ACCESS:   sensitive, writable: write-only secret",
                "TYPE:     User name and password or Access key or Connection string or Mutual TLS",
                "privateKey",
            ],
        ),
        # members every value needs are required; one credential shape's members are not
        (
            "Pipe.spec.source.objectStorage.accessKey",
            ["accessKeyId (required)  <{fromEnv: NAME}", "secretKey (required)"],
        ),
        ("Pipe.spec.source.kafka.credentials", ["    username          <{fromEnv: NAME}"]),
        (
            "Pipe.spec.source.kafka.schemaRegistry.credentials",
            ["ACCESS:   sensitive, create-time: secret sent only when the pipe is created"],
        ),
        ("Pipe.spec.pipeId", ["ACCESS:   identity: says which pipe"]),
        ("Dashboard.spec.tiles.series.type", ["VALUES:   time, table, number, search, markdown"]),
        ("Organization", ["spec (required)", "KIND:     Organization"]),
        (
            "ReversePrivateEndpoint.spec.mskClusterArn",
            [
                "ACCESS:   create-time: sent when the endpoint is created; a difference needs --replace"
            ],
        ),
        (
            "ReversePrivateEndpoint.spec.customPrivateDnsMappings",
            ["ACCESS:   writable: changed by the endpoint update (PATCH), the whole list"],
        ),
        (
            "CdcScaling.spec.replicaMemoryGb",
            ["ACCESS:   writable: changed by one PATCH", "BOUNDS:   ≥ 4, ≤ 128"],
        ),
        (
            "ReversePrivateEndpoint.spec.service",
            ["ACCESS:   identity: says which service the endpoint belongs to; never changed"],
        ),
    ],
)
def test_explain_describes_type_bounds_values_and_access_from_the_schemas(
    target: str, expected: list[str]
) -> None:
    result = run_cli(["explain", target], {})
    assert result.exit_code == 0, result.output
    for line in expected:
        assert line in result.stdout


def test_explain_names_the_unknown_field_with_a_suggestion() -> None:
    result = run_cli(["explain", "Pipe.spec.setings"], {})
    assert result.exit_code == 1
    assert "Pipe.spec has no field 'setings' (did you mean 'settings'?)" in result.stderr


def test_explain_lists_the_item_fields_of_a_list_with_no_such_field() -> None:
    result = run_cli(["explain", "Dashboard.spec.tiles.seires"], {})
    assert result.exit_code == 1
    assert (
        "Dashboard.spec.tiles has no field 'seires' (did you mean 'series'?); its fields: "
        in result.stderr
    )
    assert "series" in result.stderr.split("its fields: ", 1)[1]


def test_explain_json_carries_the_same_facts() -> None:
    result = run_cli(
        ["explain", "Pipe.spec.settings.streaming_max_insert_wait_ms", "-o", "json"], {}
    )
    body = result.json()
    assert body["type"] == "integer or null" and body["bounds"] == ["≥ 500", "≤ 60000"]


_scalars = st.one_of(
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.none(),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
)
_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_:#- ", min_size=1, max_size=10)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(
    spec=st.dictionaries(_keys, _values, max_size=4),
    mapping=st.integers(2, 4),
    offset=st.integers(0, 2),
    flow=st.booleans(),
)
def test_fmt_never_changes_what_a_manifest_means_and_is_idempotent(
    spec: dict[str, object], mapping: int, offset: int, flow: bool
) -> None:
    from io import StringIO

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from reconciler.load.fmt import format_text
    from reconciler.load.yamlsource import YamlSyntaxError, parse

    doc = {"apiVersion": "reconcile/v1", "kind": "Pipe", "metadata": {"name": "x"}, "spec": spec}
    yaml = YAML()
    yaml.indent(mapping=mapping, sequence=mapping + offset, offset=offset)
    yaml.default_flow_style = flow
    out = StringIO()
    yaml.dump(doc, out)
    written = "# a comment kept\n" + out.getvalue()
    # Only files the manifest loader accepts matter (ruamel's emitter can write plain
    # scalars with ':' in flow context that libyaml rejects; that is not fmt's doing).
    try:
        meaning = parse(written.encode())
        formatted, skipped = format_text(written)
    except (YamlSyntaxError, YAMLError):
        assume(False)
    assert skipped is None and formatted is not None
    assert parse(formatted.encode()) == meaning
    assert formatted.startswith("# a comment kept\n")
    assert format_text(formatted)[0] == formatted
