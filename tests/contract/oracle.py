"""The contract as a test oracle: load it, repair its known defects, judge one exchange.

``Contract.load()`` reads ``contract/management.openapi.json`` and repairs, in ``repaired`` (the
one place that does), the defects of the description itself that ``contract/README.md`` names:
object schemas without ``type`` (so ``oneOf [X, null]`` fails for null, and the four kafka
``credentials`` shapes all match any object: their shape is checked by ``authentication``), and
enums of nullable fields that omit ``null``. ``Contract.judge(exchange)`` finds the operation
of one recorded request/answer pair and returns its violations, each naming the operation, the
part (request body, path or query parameter, response status or body), the JSON path and the
rule broken. What the contract does not describe is looked up in ``contract/allowed.txt``.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import jsonschema
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_FILE = ROOT / "contract" / "management.openapi.json"
ALLOWED_FILE = ROOT / "contract" / "allowed.txt"
_URI = "urn:contract"
# The client identifies itself with this User-Agent: only its requests are judged (tests also
# send deliberately bad requests of their own, to see the emulator refuse them).
CLIENT_AGENT = "reconcile"

# The credential shape each kafka authentication takes (the contract's oneOf cannot tell them
# apart): PLAIN takes a user and password or a connection string, IAM_ROLE takes none.
_KAFKA_SHAPES: dict[str, tuple[str, ...]] = {
    "PLAIN": ("PLAIN", "AzureEventHub"),
    "SCRAM-SHA-256": ("PLAIN",),
    "SCRAM-SHA-512": ("PLAIN",),
    "IAM_USER": ("MskIamUser",),
    "MUTUAL_TLS": ("MutualTLS",),
    "IAM_ROLE": (),
}
_KAFKA_SOURCES = ("PipePostKafkaSource", "PipePatchKafkaSource")


@dataclass(frozen=True)
class Violation:
    """One broken rule of the contract in one exchange."""

    operation: str
    part: str
    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.operation} {self.part} {self.path}: {self.rule} — {self.message}"


@dataclass(frozen=True)
class Allowance:
    """One line of the allow-list: what it matches and why the contract need not describe it."""

    kind: str
    pattern: str
    reason: str


def repaired(document: Mapping[str, Any]) -> dict[str, Any]:
    """The contract with its known defects repaired (the one place that repairs them)."""
    doc = copy.deepcopy(dict(document))
    schemas = doc["components"]["schemas"]
    roots = list(schemas.values())
    for item in doc["paths"].values():
        for spec in item.values():
            roots += [p["schema"] for p in spec.get("parameters", [])]
            for holder in [spec.get("requestBody", {}), *spec["responses"].values()]:
                roots += [c["schema"] for c in holder.get("content", {}).values()]
    for root in roots:
        for schema in _schemas(root):
            _repair(schema)
    # Defect: the four credential shapes have neither type nor required, so any object matches
    # all four: require every member of the shape its `authentication` takes.
    for name in _SHAPES:
        shape = schemas[name]
        shape["required"] = sorted(shape["properties"])
        shape["additionalProperties"] = False
    for name in _KAFKA_SOURCES:
        source = schemas[name]
        every = [{"$ref": f"#/components/schemas/{s}"} for s in _SHAPES]
        source["properties"]["credentials"] = {"anyOf": every}
        source["allOf"] = [_by_authentication(a, shapes) for a, shapes in _KAFKA_SHAPES.items()]
    return doc


_SHAPES = ("PLAIN", "MskIamUser", "AzureEventHub", "MutualTLS")


def _repair(schema: dict[str, Any]) -> None:
    # Defect: object schemas carry no `type`, so null (or any value) matches them, and
    # `oneOf [X, null]` fails for null.
    if "properties" in schema and "type" not in schema:
        schema["type"] = "object"
    # Defect: enums of fields typed [..., "null"] do not list null; the type allows it.
    types, enum = schema.get("type"), schema.get("enum")
    if isinstance(types, list) and "null" in types and enum is not None and None not in enum:
        schema["enum"] = [*enum, None]
    # Defect: a property schema lost in the reduction, left as the list of its keywords
    # (Service.tags): an array (it names `items`), else unconstrained.
    for name, sub in list(schema.get("properties", {}).items()):
        if isinstance(sub, list):
            schema["properties"][name] = {"type": "array"} if "items" in sub else {}


def _schemas(schema: Any) -> Iterator[dict[str, Any]]:
    """A schema and every subschema in it (not the names of its properties)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for sub in list(schema.get("properties", {}).values()):
        yield from _schemas(sub)
    for key in ("items", "additionalProperties", "not"):
        yield from _schemas(schema.get(key))
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in schema.get(key, []):
            yield from _schemas(sub)


def _by_authentication(authentication: str, shapes: tuple[str, ...]) -> dict[str, Any]:
    refs = [{"$ref": f"#/components/schemas/{s}"} for s in shapes]
    allowed: dict[str, Any] = {"anyOf": refs} if refs else {"not": {}}
    return {
        "if": {
            "properties": {"authentication": {"const": authentication}},
            "required": ["authentication"],
        },
        "then": {"properties": {"credentials": allowed}},
    }


def _check_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)


def _check_date_time(value: object) -> bool:
    if not isinstance(value, str) or not _RFC3339.match(value):
        return not isinstance(value, str)
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


def _check_hostname(value: object) -> bool:
    return not isinstance(value, str) or bool(_HOSTNAME.match(value))


FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks("uuid")(_check_uuid)
FORMATS.checks("date-time")(_check_date_time)
FORMATS.checks("hostname")(_check_hostname)


@dataclass(frozen=True)
class Operation:
    """One operation of the contract: method, path template and where its schemas live."""

    operation_id: str
    method: str
    template: str
    pattern: re.Pattern[str]
    pointer: str
    spec: Mapping[str, Any]

    @property
    def label(self) -> str:
        """How violations name it: ``pipeUpdate PATCH /v1/…/pipes/{pipeId}``."""
        return f"{self.operation_id} {self.method} {self.template}"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Contract:
    """The repaired contract, its operations and the allow-list."""

    def __init__(self, document: Mapping[str, Any], allowed: list[Allowance]):
        self.document = repaired(document)
        self.allowed = allowed
        resource = Resource.from_contents(self.document, default_specification=DRAFT202012)
        self.registry: Registry[Any] = Registry().with_resource(_URI, resource)
        self.operations: list[Operation] = []
        for template, item in self.document["paths"].items():
            regex = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            for method, spec in item.items():
                pointer = f"/paths/{_escape(template)}/{method}"
                self.operations.append(
                    Operation(
                        spec["operationId"],
                        method.upper(),
                        template,
                        re.compile(regex),
                        pointer,
                        spec,
                    )
                )
        # A literal segment beats a parameter (``pipes/schemaDiscovery`` over ``pipes/{pipeId}``).
        self.operations.sort(key=lambda op: op.template.count("{"))

    @classmethod
    def load(cls) -> Contract:
        """The project's contract and allow-list."""
        return _loaded()

    def validator(self, pointer: str) -> jsonschema.protocols.Validator:
        """A Draft 2020-12 validator of the schema at ``pointer`` in the repaired contract."""
        return _validator(self, pointer)

    def schema(self, name: str) -> dict[str, Any]:
        """A component schema of the repaired contract, by name."""
        result: dict[str, Any] = self.document["components"]["schemas"][name]
        return result

    def allowance(self, kind: str, value: str) -> Allowance | None:
        """The allow-list line covering ``value`` (a path or a status), if any."""
        for entry in self.allowed:
            if entry.kind == kind and fnmatch.fnmatchcase(value, entry.pattern):
                return entry
        return None

    def find(self, method: str, path: str) -> tuple[Operation | None, dict[str, str], bool]:
        """The operation serving (method, path), its path parameters, and whether the path exists."""
        path_known = False
        for op in self.operations:
            match = op.pattern.match(path)
            if match is None:
                continue
            path_known = True
            if op.method == method:
                return op, match.groupdict(), True
        return None, {}, path_known

    def judge(self, exchange: Mapping[str, Any]) -> list[Violation]:
        """The violations of one recorded exchange (empty when it keeps the contract)."""
        method, path = exchange["method"], exchange["path"]
        status = int(exchange["status"])
        from_client = exchange.get("agent") == CLIENT_AGENT
        op, params, _ = self.find(method, path)
        if op is None:
            where = f"{method} {path}"
            if from_client:
                return [
                    Violation(
                        where, "request", "$", "operation", "the contract has no such operation"
                    )
                ]
            if status < 400:
                return [
                    Violation(
                        where,
                        "response",
                        "$",
                        "operation",
                        f"answered {status} to an operation the contract lacks",
                    )
                ]
            return []
        found: list[Violation] = []
        if from_client:
            found += self._request(op, params, exchange)
        found += self._response(op, status, exchange.get("response"))
        return found

    def _request(
        self, op: Operation, params: dict[str, str], exchange: Mapping[str, Any]
    ) -> list[Violation]:
        found: list[Violation] = []
        declared = {(p["in"], p["name"]): p for p in op.spec.get("parameters", [])}
        for name, value in params.items():
            spec = declared.get(("path", name))
            if spec is not None:
                found += self._check(op, f"path parameter {name}", value, spec["schema"], "$")
        # Query parameters are form-style and exploded: `filter=a&filter=b` is the array [a, b].
        query: dict[str, list[str]] = {}
        for name, value in parse_qsl(exchange.get("query") or "", keep_blank_values=True):
            query.setdefault(name, []).append(value)
        for name, values in query.items():
            spec = declared.get(("query", name))
            part = f"query parameter {name}"
            if spec is None:
                found.append(Violation(op.label, part, "$", "parameters", "no such parameter"))
                continue
            schema = spec["schema"]
            value: Any = values if schema.get("type") == "array" else values[-1]
            if len(values) > 1 and schema.get("type") != "array":
                found.append(Violation(op.label, part, "$", "type", "repeated, but not an array"))
            found += self._check(op, part, value, schema, "$")
        for (where, name), spec in declared.items():
            if where == "query" and spec.get("required") and name not in query:
                found.append(
                    Violation(op.label, f"query parameter {name}", "$", "required", "missing")
                )
        body = exchange.get("request")
        if "requestBody" not in op.spec:
            if body is not None:
                found.append(
                    Violation(
                        op.label, "request body", "$", "requestBody", "the operation takes no body"
                    )
                )
            return found
        if body is None:
            return found
        pointer = op.pointer + "/requestBody/content/application~1json/schema"
        found += self._validate(op, "request body", body, pointer)
        return found

    def _response(self, op: Operation, status: int, body: Any) -> list[Violation]:
        responses = op.spec["responses"]
        key = str(status)
        if key not in responses:
            if self.allowance("status", key) is None:
                return [
                    Violation(
                        op.label,
                        "response status",
                        "$",
                        "responses",
                        f"{status} is not a status the operation answers",
                    )
                ]
            # A status the contract leaves out (allow-listed) still answers in its error shape.
            key = "400"
        content = responses[key].get("content", {}).get("application/json")
        if content is None:
            return []
        pointer = f"{op.pointer}/responses/{key}/content/application~1json/schema"
        return self._validate(op, f"response {status} body", body, pointer)

    def _validate(self, op: Operation, part: str, instance: Any, pointer: str) -> list[Violation]:
        return [
            _violation(op.label, part, error)
            for error in self.validator(pointer).iter_errors(instance)
        ]

    def _check(
        self, op: Operation, part: str, value: str, schema: Mapping[str, Any], path: str
    ) -> list[Violation]:
        validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
        return [_violation(op.label, part, error) for error in validator.iter_errors(value)]


def _violation(operation: str, part: str, error: ValidationError) -> Violation:
    leaf = _deepest(error)
    value = json.dumps(leaf.validator_value, default=str)
    rule = f"{leaf.validator} {value}" if len(value) <= 60 else str(leaf.validator)
    return Violation(operation, part, leaf.json_path, rule, leaf.message[:300])


def _deepest(error: ValidationError) -> ValidationError:
    # oneOf/anyOf report at the parent: descend to the branch that got furthest into the value
    # (the deepest error; a bare type mismatch, like the `null` branch's, loses a tie).
    while error.context:
        error = max(
            error.context,
            key=lambda e: (len(e.absolute_path), e.validator not in ("type", "not", "const")),
        )
    return error


@cache
def _loaded() -> Contract:
    document = json.loads(CONTRACT_FILE.read_text())
    return Contract(document, read_allowed(ALLOWED_FILE))


_VALIDATORS: dict[tuple[int, str], jsonschema.protocols.Validator] = {}


def _validator(contract: Contract, pointer: str) -> jsonschema.protocols.Validator:
    key = (id(contract), pointer)
    if key not in _VALIDATORS:
        node: Any = contract.document
        for token in pointer.strip("/").split("/"):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        # Component references inlined: jsonschema resolves a $ref on every use, which made
        # judging a list of pipes several times slower than the test that caused it.
        schema = _inlined(node, contract.document["components"]["schemas"], ())
        _VALIDATORS[key] = jsonschema.Draft202012Validator(
            schema, registry=contract.registry, format_checker=FORMATS
        )
    return _VALIDATORS[key]


_PREFIX = "#/components/schemas/"


def _inlined(node: Any, schemas: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inlined(item, schemas, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PREFIX):
        name = ref[len(_PREFIX) :]
        if name in seen:  # a recursive schema: leave the reference to the registry
            return {**node, "$ref": f"{_URI}{ref}"}
        rest = {k: v for k, v in node.items() if k != "$ref"}
        target = _inlined(schemas[name], schemas, (*seen, name))
        return (
            {**target, **rest} if not rest else {"allOf": [target, _inlined(rest, schemas, seen)]}
        )
    return {k: _inlined(v, schemas, seen) for k, v in node.items()}


def read_allowed(path: Path) -> list[Allowance]:
    """Parse the allow-list: ``path PATTERN  reason`` or ``status CODE  reason``, one a line."""
    entries: list[Allowance] = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[0] not in ("path", "status"):
            raise ValueError(
                f"{path.name}:{number}: expected 'path|status PATTERN reason', got {raw!r}"
            )
        entries.append(Allowance(parts[0], parts[1], parts[2]))
    return entries
