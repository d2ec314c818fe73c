"""Numeric options out of range are refused as usage errors, before anything is sent or read.

Acceptance findings: ``--timeout 0`` / ``-1`` reached the client and came back as a misleading
"cannot reach the API" error, ``--timeout nan`` as an internal error, and ``--lock-timeout``
accepted negative and NaN values silently.
"""

from __future__ import annotations

import math

import pytest

from reconciler.client.api import ApiConfig
from reconciler.model.errors import ConfigError
from tests.support.cli import run_cli
from tests.support.manifests import EXAMPLES

MANIFESTS = str(EXAMPLES)
ENV = {
    "RECONCILE_BASE_URL": "http://127.0.0.1:9",
    "RECONCILE_KEY_ID": "id",
    "RECONCILE_KEY_SECRET": "secret",
    "RECONCILE_DASHBOARDS_TOKEN": "token",
}


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["plan", MANIFESTS, "--timeout", "0"], "--timeout"),
        (["plan", MANIFESTS, "--timeout", "-1"], "--timeout"),
        (["plan", MANIFESTS, "--timeout", "nan"], "--timeout"),
        (["plan", MANIFESTS, "--timeout", "inf"], "--timeout"),
        (["get", "services", "--timeout", "0"], "--timeout"),
        (["apply", MANIFESTS, "--auto-approve", "--lock-timeout", "-5"], "--lock-timeout"),
        (["plan", MANIFESTS, "--lock-timeout", "nan"], "--lock-timeout"),
        (["state", "rm", "Pipe/x", "--lock-timeout", "-1"], "--lock-timeout"),
    ],
)
def test_an_out_of_range_seconds_option_is_a_usage_error_naming_the_flag(
    args: list[str], flag: str
) -> None:
    result = run_cli(args, ENV)
    assert result.exit_code == 1
    assert f"Invalid value for '{flag}'" in result.stderr
    assert "internal error" not in result.output
    assert "cannot reach" not in result.output


@pytest.mark.parametrize("timeout", [0.0, -1.0, math.nan, math.inf])
def test_api_config_check_refuses_a_timeout_that_is_not_a_positive_finite_number(
    timeout: float,
) -> None:
    config = ApiConfig(
        base_url="http://127.0.0.1:9",
        key_id="id",
        key_secret="secret",
        dashboards_url="http://127.0.0.1:9",
        dashboards_token="token",
        timeout=timeout,
    )
    with pytest.raises(ConfigError, match="timeout"):
        config.check()


def test_top_level_help_lists_every_exit_code_the_readme_documents() -> None:
    result = run_cli(["--help"], {})
    text = " ".join(result.stdout.split())
    for fragment in ("130", "143", "check backups"):
        assert fragment in text


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_an_emulator_port_outside_0_to_65535_is_a_usage_error(port: str) -> None:
    result = run_cli(["emulator", "--port", port], {})
    assert result.exit_code == 1
    assert "Invalid value for '--port'" in result.stderr
    assert "internal error" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["validate", MANIFESTS, "--organization", "not-a-uuid"],
        ["plan", MANIFESTS],
        ["apply", MANIFESTS, "--auto-approve"],
        ["get", "services"],
        ["check", "backups", "--max-age", "26h"],
    ],
    ids=["validate", "plan", "apply", "get", "check"],
)
def test_a_default_organization_that_is_not_a_uuid_is_refused_before_any_request(
    args: list[str],
) -> None:
    # Acceptance finding: RECONCILE_ORGANIZATION_ID='../../x' was inserted into request paths
    # as given (GET /v1/organizations/../../x/services reached /x/services on the server).
    result = run_cli(args, {**ENV, "RECONCILE_ORGANIZATION_ID": "../../x"})
    assert result.exit_code == 1
    assert "is not a valid UUID" in result.stderr
    assert "RECONCILE_ORGANIZATION_ID" in result.stderr
    assert "cannot reach" not in result.output


def test_validate_json_prints_its_document_for_an_error_that_is_not_in_a_manifest() -> None:
    result = run_cli(["validate", MANIFESTS, "--organization", "x", "-o", "json"], {})
    assert result.exit_code == 1
    document = result.json()
    assert document["valid"] is False and document["resources"] == []
    assert "is not a valid UUID" in document["errors"][0]["message"]
