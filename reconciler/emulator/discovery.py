"""Schema discovery: the fields a kafka or kinesis source's messages carry, inferred from samples.

The emulator reads no real stream: it holds a few sample messages per kafka topic and per
kinesis stream (``SAMPLES``; any other topic or stream reads ``DEFAULT_SAMPLE``) and infers the
fields from them, so the answer is the same every time and tests can rely on it. The body is
checked like a create's source (credentials fitting the authentication, …). Inference, per
field in order of first appearance: a boolean is ``Bool``, an integer ``Int64``, any other
number ``Float64``, an ISO 8601 timestamp string ``DateTime64(3)``, another string ``String``,
an array ``Array(<its items' type>)``, an object ``JSON``; mixed integers and floats are
``Float64``, any other mix ``String``. A field missing from a sample message, or null in one,
is ``optional``. ``meta`` says which sample was read and how many messages it holds.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.emulator.create import check_stream_source
from reconciler.emulator.pipe_bodies import KAFKA_CREATE, KINESIS_CREATE, single_kind
from reconciler.emulator.protocol import ApiError
from reconciler.emulator.validation import management, obj

__all__: list[str] = []


REQUEST = obj(
    {"source": single_kind({"kafka": KAFKA_CREATE, "kinesis": KINESIS_CREATE}, False)},
    required=("source",),
)

_ORDER = {"id": "o-1001", "amount": 12.5, "ts": "2024-03-01T09:00:00Z", "updated": 1709283600}
SAMPLES: dict[str, dict[str, list[dict[str, Any]]]] = {
    "kafka": {
        "orders": [
            _ORDER,
            {**_ORDER, "id": "o-1002", "amount": 7, "coupon": "SPRING"},
            {**_ORDER, "id": "o-1003", "amount": 99.99, "coupon": None},
        ],
        "payments": [
            {"payment_id": 1, "order_id": "o-1001", "captured": True, "tags": ["card"]},
            {"payment_id": 2, "order_id": "o-1002", "captured": False, "tags": []},
        ],
    },
    "kinesis": {
        "clickstream": [
            {"session": "s-1", "page": "/", "at": "2024-03-01T09:00:00.120Z", "ms": 31},
            {
                "session": "s-1",
                "page": "/cart",
                "at": "2024-03-01T09:00:04.500Z",
                "ms": 18,
                "referrer": {"host": "example.com"},
            },
        ],
    },
}
DEFAULT_SAMPLE: list[dict[str, Any]] = [
    {"id": 1, "name": "first", "created_at": "2024-03-01T00:00:00Z", "active": True},
    {"id": 2, "name": "second", "created_at": "2024-03-02T00:00:00Z", "active": False},
]
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")


def validate(body: Any) -> tuple[str, dict[str, Any]]:
    """(kind, source) of a schema discovery body, or a 400 naming the first bad field."""
    source = management(REQUEST, body)["source"]
    [(kind, given)] = source.items()
    given = {k: v for k, v in given.items() if v is not None}
    try:
        check_stream_source(kind, given)
    except ApiError as err:
        raise ApiError(400, err.message) from None
    return kind, given


def discover(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    """The discovered fields and the meta data of the sample they come from."""
    name = source["topics"].split(",")[0].strip() if kind == "kafka" else source["streamName"]
    records = SAMPLES[kind].get(name)
    sample = name if records is not None else "default"
    records = records if records is not None else DEFAULT_SAMPLE
    names: list[str] = []
    for record in records:
        names.extend(key for key in record if key not in names)
    fields = []
    for key in names:
        values = [record[key] for record in records if record.get(key) is not None]
        optional = len(values) < len(records)
        fields.append({"name": key, "type": _type_of(values), "optional": optional})
    meta = {"format": source["format"], "sample": sample, "messages": str(len(records))}
    return {"fields": fields, "meta": meta}


def _type_of(values: list[Any]) -> str:
    types = {_one_type(value) for value in values}
    if not types:
        return "String"
    if len(types) == 1:
        return types.pop()
    return "Float64" if types == {"Int64", "Float64"} else "String"


def _one_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Bool"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, str):
        return "DateTime64(3)" if _TIMESTAMP.fullmatch(value) else "String"
    if isinstance(value, list):
        return f"Array({_type_of([v for v in value if v is not None])})"
    return "JSON"
