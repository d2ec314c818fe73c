"""A service given by name — a manifest's ``spec.service``, ``--service`` on the command line —
is found by one rule: by its name or its id. A name no service has is refused naming the
organization's services and the likeliest one meant; a name several services share is
ambiguous, and the message says what to give instead. Pipes, CDC capacity and ``get`` agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.model.identity import find_service
from tests.support.cli import run_cli, write_manifest
from tests.support.emulator import Emulator
from tests.support.seed_ids import KAFKA_PIPE, ORG_ID

SERVICES = [
    {"id": "s-1", "name": "analytics"},
    {"id": "s-2", "name": "staging"},
    {"id": "s-3", "name": "staging"},
]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("analytics", "s-1"),
        ("s-3", "s-3"),
        (
            "analytcs",
            "service 'analytcs' not found in organization o-1 (did you mean 'analytics'?) "
            "(services: analytics, staging)",
        ),
        (
            "warehouse",
            "service 'warehouse' not found in organization o-1 (services: analytics, staging)",
        ),
        ("staging", "service name 'staging' is ambiguous (2 services); use serviceId"),
    ],
)
def test_a_service_is_found_by_name_or_id_or_the_reason_is_said(ref: str, expected: str) -> None:
    found = find_service(SERVICES, ref, "o-1", instead="use serviceId")
    assert (found if isinstance(found, str) else found["id"]) == expected


def test_an_empty_organization_names_no_services() -> None:
    found = find_service([], "analytics", "o-1", instead="use its id")
    assert found == "service 'analytics' not found in organization o-1 (services: none)"


def test_a_pipe_a_cdc_capacity_and_get_refuse_an_unknown_service_in_the_same_words(
    emulator: Emulator, tmp_path: Path
) -> None:
    pipe = {"organizationId": ORG_ID, "service": "analytcs", "pipeId": KAFKA_PIPE}
    write_manifest(tmp_path / "m" / "pipe.yaml", "Pipe", "orders", pipe)
    cdc = {"organizationId": ORG_ID, "service": "analytcs", "replicaCpuMillicores": 4000}
    write_manifest(tmp_path / "m" / "cdc.yaml", "CdcScaling", "analytics-cdc", cdc)
    said = (
        f"service 'analytcs' not found in organization {ORG_ID} (did you mean 'analytics'?) "
        "(services: analytics, archive, staging)"
    )
    planned = run_cli(
        ["plan", str(tmp_path / "m"), "--state", str(tmp_path / "s.json")], emulator.env()
    )
    assert planned.exit_code == 1
    assert planned.output.count(said) == 2, planned.output
    got = run_cli(
        ["get", "pipes", "--service", "analytcs", "--organization", ORG_ID], emulator.env()
    )
    assert got.exit_code == 1
    assert said in got.stderr, got.output
