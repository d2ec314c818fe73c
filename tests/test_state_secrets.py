"""A PostgreSQL state URL's password is never printed: not by `reconcile config`, not in a
connection error, not in a lock message; the state document holds no secret value."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from reconciler.model.errors import StateError
from reconciler.state.backend import locked_state, redact_address
from reconciler.state.stores import open_backend
from tests.support.cli import SECRET_ENV, run_cli
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES
from tests.support.state_servers import Postgres, free_port

PASSWORD = "hunter2-SECRETPW"


def test_redact_address_drops_the_password_from_authority_and_query() -> None:
    assert (
        redact_address(f"postgresql://ops:{PASSWORD}@db:5432/x?sslmode=require&password={PASSWORD}")
        == "postgresql://ops@db:5432/x?sslmode=require"
    )
    assert redact_address("s3://bucket/key.json") == "s3://bucket/key.json"
    assert redact_address("state.json") == "state.json"


def test_config_shows_the_state_url_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://ops:{PASSWORD}@127.0.0.1:5432/ops"
    result = run_cli(["config"], {"RECONCILE_STATE": url})
    assert result.exit_code == 0, result.output
    assert PASSWORD not in result.output
    assert "postgresql://ops@127.0.0.1:5432/ops" in result.stdout


def test_a_connection_failure_names_the_database_without_the_password() -> None:
    url = f"postgresql://ops:{PASSWORD}@127.0.0.1:{free_port()}/ops"
    with pytest.raises(StateError) as caught:
        open_backend(url).read()
    assert PASSWORD not in str(caught.value)
    assert "cannot connect to the state database postgresql://ops@127.0.0.1" in str(caught.value)


def test_the_shared_state_holds_fingerprints_and_never_a_secret_value(
    emulator: Emulator, postgres_server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    workspace = f"w{uuid.uuid4().hex[:8]}"
    env = {**emulator.env(), "RECONCILE_STATE": postgres_server.url}
    repo = EXAMPLES
    result = run_cli(
        ["apply", str(repo), "--auto-approve", "--workspace", workspace, "--rate", "none"], env
    )
    assert result.exit_code == 0, result.output
    with locked_state(open_backend(postgres_server.url, workspace)) as state:
        document = state.serialize()
    assert json.loads(document)["resources"]
    for value in SECRET_ENV.values():
        assert value not in document
    assert "hmac-sha256:" in document
