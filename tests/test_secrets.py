"""Secrets (``reconciler.model.secrets``): ``Secret`` never shows its value, references resolved from
the environment or a file next to the manifest (errors located), ``reveal``/``redact`` over
trees, and HMAC fingerprints that never contain the secret."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from reconciler.model.errors import Location, ManifestError
from reconciler.model.resources import FixedLocator, Resource
from reconciler.model.secrets import (
    REDACTED,
    Secret,
    fingerprint,
    is_reference,
    redact,
    resolve_tree,
    reveal,
    secret_paths,
    unresolved,
)

VALUE = "pA55-w0rd-DISTINCTIVE-7781"
KEY = b"k" * 32
WHERE = Location("pipes/orders.yaml", 12, 9)


def resource(file: str = "pipes/orders.yaml", spec: dict[str, Any] | None = None) -> Resource:
    return Resource("Pipe", "orders", spec or {}, file, locator=FixedLocator(WHERE))


def test_secret_never_shows_its_value(caplog: pytest.LogCaptureFixture) -> None:
    secret = Secret(VALUE)
    shown = [
        repr(secret),
        str(secret),
        f"{secret}",
        f"{secret!r}",
        repr([secret]),
        str({"p": secret}),
    ]
    for text in shown:
        assert VALUE not in text
    assert repr(secret) == "Secret(***)"
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("creds %s %r", secret, {"password": secret})
    assert VALUE not in caplog.text


def test_secret_compares_by_value_and_reveals_on_request() -> None:
    assert Secret(VALUE) == Secret(VALUE)
    assert Secret(VALUE) != Secret(VALUE + "x")
    assert Secret(VALUE) != VALUE
    assert hash(Secret(VALUE)) == hash(Secret(VALUE))
    assert Secret(VALUE).reveal() == VALUE


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"fromEnv": "X"}, True, id="fromEnv"),
        pytest.param({"fromFile": "x.txt"}, True, id="fromFile"),
        pytest.param({"fromEnv": "X", "other": 1}, False, id="extra-key"),
        pytest.param("literal", False, id="literal-string"),
        pytest.param({}, False, id="empty-object"),
    ],
)
def test_is_reference_recognises_exactly_one_fromenv_or_fromfile(
    value: Any, expected: bool
) -> None:
    assert is_reference(value) is expected


def test_resolve_tree_reads_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_PASSWORD", VALUE)
    monkeypatch.setenv("KAFKA_USER", "svc")
    tree = {"username": {"fromEnv": "KAFKA_USER"}, "password": {"fromEnv": "KAFKA_PASSWORD"}}
    resolved = resolve_tree(resource(), ("source", "kafka", "credentials"), tree)
    assert resolved == {"username": Secret("svc"), "password": Secret(VALUE)}
    assert VALUE not in repr(resolved)


def test_resolve_tree_reads_files_relative_to_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project directory, without a project file
    (tmp_path / "pipes").mkdir()
    (tmp_path / "pipes" / "key.txt").write_text(VALUE + "\n", encoding="utf-8")
    manifest = str(tmp_path / "pipes" / "orders.yaml")
    resolved = resolve_tree(resource(manifest), ("source",), {"fromFile": "key.txt"})
    assert resolved == Secret(VALUE)


def test_resolve_tree_keeps_non_references_and_walks_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A", "a")
    tree = {"plain": 1, "items": [{"fromEnv": "A"}, "x"]}
    assert resolve_tree(resource(), (), tree) == {"plain": 1, "items": [Secret("a"), "x"]}


def test_resolve_tree_names_the_location_of_an_unset_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(ManifestError) as caught:
        resolve_tree(
            resource(),
            ("source", "kafka", "credentials"),
            {"password": {"fromEnv": "NOT_SET_ANYWHERE"}},
        )
    assert str(caught.value) == (
        "pipes/orders.yaml:12:9: spec.source.kafka.credentials.password: "
        "environment variable NOT_SET_ANYWHERE is not set"
    )


def test_resolve_tree_names_an_unreadable_secret_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    manifest = str(tmp_path / "orders.yaml")
    with pytest.raises(ManifestError, match=r"cannot read secret file .*absent\.txt: No such file"):
        resolve_tree(resource(manifest), ("source",), {"fromFile": "absent.txt"})


def test_reveal_and_redact_walk_trees() -> None:
    tree = {"a": Secret(VALUE), "b": [Secret("x"), 1], "c": {"d": "plain"}}
    assert reveal(tree) == {"a": VALUE, "b": ["x", 1], "c": {"d": "plain"}}
    assert redact(tree) == {"a": REDACTED, "b": [REDACTED, 1], "c": {"d": "plain"}}
    assert VALUE not in repr(redact(tree))


def test_fingerprint_is_a_keyed_hmac_that_never_holds_the_secret() -> None:
    tree = {"username": Secret("u"), "password": Secret(VALUE)}
    print_ = fingerprint(KEY, tree)
    assert print_.startswith("hmac-sha256:")
    assert len(print_) == len("hmac-sha256:") + 64
    assert VALUE not in print_
    assert fingerprint(KEY, {"password": Secret(VALUE), "username": Secret("u")}) == print_
    assert fingerprint(KEY, {"username": Secret("u"), "password": Secret("other")}) != print_
    assert fingerprint(b"x" * 32, tree) != print_
    assert fingerprint(KEY, Secret(VALUE)) == fingerprint(KEY, VALUE)


def test_secret_paths_lists_the_write_only_subtrees_a_pipe_states() -> None:
    spec = {
        "source": {
            "kafka": {"credentials": {}, "iamRole": "r"},
            "objectStorage": {"accessKey": {}, "connectionString": {}, "path": "p"},
        }
    }
    assert list(secret_paths(resource(spec=spec))) == [
        ("source", "kafka", "credentials"),
        ("source", "objectStorage", "accessKey"),
        ("source", "objectStorage", "connectionString"),
    ]
    dashboard = Resource("Dashboard", "d", {"source": spec["source"]}, "d.yaml")
    assert list(secret_paths(dashboard)) == []
    assert list(secret_paths(resource(spec={"source": "nope"}))) == []


@pytest.mark.parametrize(
    ("reference", "env", "file_text", "problem"),
    [
        ({"fromEnv": "EMPTY_VAR"}, "", None, "environment variable EMPTY_VAR is empty"),
        ({"fromEnv": "EMPTY_VAR", "allowEmpty": True}, "", None, None),
        ({"fromEnv": "EMPTY_VAR", "allowEmpty": False}, "", None, "is empty"),
        ({"fromEnv": "EMPTY_VAR"}, "v", None, None),
        ({"fromFile": "s.txt"}, None, "\n", "secret file .*s.txt is empty"),
        ({"fromFile": "s.txt", "allowEmpty": True}, None, "", None),
        ({"fromFile": "absent.txt"}, None, None, "cannot read secret file"),
    ],
)
def test_unresolved_refuses_an_empty_secret_unless_the_reference_allows_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reference: dict[str, Any],
    env: str | None,
    file_text: str | None,
    problem: str | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    if env is not None:
        monkeypatch.setenv("EMPTY_VAR", env)
    if file_text is not None:
        (tmp_path / "s.txt").write_text(file_text)
    spec = {
        "source": {
            "kafka": {"credentials": {"username": {"fromEnv": "SET_VAR"}, "password": reference}}
        }
    }
    monkeypatch.setenv("SET_VAR", "user")
    errors = unresolved([resource(str(tmp_path / "p.yaml"), spec)])
    if problem is None:
        assert errors == []
    else:
        assert len(errors) == 1
        assert errors[0].path == "spec.source.kafka.credentials.password"
        assert re.search(problem, errors[0].message)


def test_unresolved_lists_every_problem_of_every_resource() -> None:
    spec = {
        "source": {
            "kafka": {
                "credentials": {
                    "username": {"fromEnv": "NO_A_9"},
                    "password": {"fromEnv": "NO_B_9"},
                }
            }
        }
    }
    errors = unresolved([resource(spec=spec), resource(spec=spec)])
    assert [e.message for e in errors] == [
        f"environment variable {n} is not set" for n in ("NO_A_9", "NO_B_9") * 2
    ]
