"""The management API contract as a judge of the emulator's answers (jsonschema, Draft 2020-12).

``contract_errors(method, template, response)`` checks one management answer — status listed,
body valid against the contract's schema for that operation and status — and returns the
violations, each naming the JSON path and the rule. The contract is the one the oracle loads
(``tests.contract.oracle``), with its known defects repaired there, in one place.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import httpx
import jsonschema

from tests.contract.oracle import FORMATS, Contract
from tests.support.seed_ids import ORG_ID

_ROOT = "urn:contract"


def contract() -> dict[str, Any]:
    """The contract document with its known defects repaired."""
    return Contract.load().document


def operation(method: str, template: str) -> dict[str, Any]:
    """The contract's description of one operation (KeyError when it has none)."""
    result: dict[str, Any] = contract()["paths"][template][method.lower()]
    return result


def schema_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    """Every violation of ``schema`` (refs resolve in the contract) by ``instance``."""
    validator = jsonschema.Draft202012Validator(
        schema, registry=Contract.load().registry, format_checker=FORMATS
    )
    found = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        # Of a failed anyOf/oneOf, name the branch that came closest and its real problem.
        while error.context:
            error = max(error.context, key=lambda e: len(e.absolute_path))
        where = "$" + "".join(f"[{p!r}]" for p in error.absolute_path)
        found.append(f"{where}: {error.message} ({error.validator})")
    return found


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    # Component refs are local to the contract document; rebase them on its registry id.
    text = json.dumps(schema).replace('"#/components/', f'"{_ROOT}#/components/')
    result: dict[str, Any] = json.loads(text)
    return result


def contract_errors(method: str, template: str, response: httpx.Response) -> list[str]:
    """The violations of the contract by one management answer (empty when it conforms)."""
    responses = operation(method, template)["responses"]
    status = str(response.status_code)
    if status not in responses:
        if response.status_code >= 400 and "400" in responses:
            status = "400"  # every error shares the documented error body
        else:
            return [f"status {status} is not listed (listed: {', '.join(responses)})"]
    content = responses[status].get("content", {}).get("application/json")
    if content is None:
        return []
    return schema_errors(_resolved(content["schema"]), response.json())


def body_errors(method: str, template: str, body: Any) -> list[str]:
    """The violations of the contract by one request body."""
    request = operation(method, template)["requestBody"]["content"]["application/json"]
    return schema_errors(_resolved(request["schema"]), body)


def within_contract(method: str, template: str, response: httpx.Response) -> Any:
    """The answer's JSON, asserting it conforms to the contract."""
    problems = contract_errors(method, template, response)
    assert not problems, f"{method} {template} -> {response.status_code}: " + "; ".join(problems)
    return response.json()


class Sender(Protocol):
    """What sends one request (the in-process test client)."""

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send one request."""
        ...


def exchange(
    client: Sender, method: str, template: str, body: Any = None, **ids: str
) -> httpx.Response:
    """Send ``method`` on the contract path ``template`` (ids filled in, the demo organization's
    by default) and assert the answer conforms to the contract."""
    path = template.format(**{"organizationId": ORG_ID, **ids})
    kwargs: dict[str, Any] = {} if body is None else {"json": body}
    response = client.request(method, path, **kwargs)
    within_contract(method, template, response)
    return response
