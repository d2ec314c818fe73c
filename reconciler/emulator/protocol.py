"""The emulator's wire protocol: envelopes, errors, identities and authentication.

Management answers are wrapped as ``{"status", "requestId", "result"}`` and its errors as
``{"status", "requestId", "error": "CODE: message"}``. The dashboards interface answers
``{"data": …}``, ``{"message": …}`` for errors and an *empty* body for 401. Handlers only raise
``ApiError``; the router renders it in the shape of the interface the request came in on, so
no handler needs to know which envelope it speaks. Two identities exist: the demo organization's
(from the environment, like the real client reads it) and a built-in second organization whose
valid credentials must be refused with 403 on the demo organization.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.responses import Response

__all__: list[str] = []


DEMO_ORG_ID = "7c1e4b2a-9f3d-4c8e-a5b6-0d1e2f3a4b5c"
OTHER_ORG_ID = "5d2f8e1a-6b3c-4d7e-9f0a-1b2c3d4e5f60"

CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    424: "FAILED_DEPENDENCY",
    429: "TOO_MANY_REQUESTS",
    500: "INTERNAL_SERVER_ERROR",
    502: "BAD_GATEWAY",
    503: "SERVICE_UNAVAILABLE",
}

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class ApiError(Exception):
    """An HTTP error answer; ``message`` excludes the ``CODE:`` prefix (added when rendered)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})

    @property
    def code(self) -> str:
        """The upper-case code that prefixes management error messages."""
        return CODES.get(self.status, "ERROR")


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """A compact JSON response (no pretty-printing: large pipe lists are sent often)."""
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(payload, status, headers=dict(headers or {}), media_type="application/json")


def management_ok(result: Any, request_id: str) -> Response:
    """Wrap a result in the management success envelope."""
    return json_response({"status": 200, "requestId": request_id, "result": result})


def management_error(err: ApiError, request_id: str) -> Response:
    """Render an error in the management error envelope."""
    body = {"status": err.status, "requestId": request_id, "error": f"{err.code}: {err.message}"}
    return json_response(body, err.status, err.headers)


def dashboards_ok(data: Any) -> Response:
    """Wrap data in the dashboards envelope."""
    return json_response({"data": data})


def dashboards_error(err: ApiError) -> Response:
    """Render an error the way the dashboards interface does (401 has an empty body)."""
    if err.status == 401:
        return Response(b"", 401, headers=err.headers)
    return json_response({"message": err.message}, err.status, err.headers)


def require_uuid(value: str, name: str) -> str:
    """Return ``value`` if it is uuid-shaped, else raise a 400 naming the parameter."""
    if not _UUID.fullmatch(value):
        raise ApiError(400, f"{name} must be a uuid, got {value!r}")
    return value.lower()


def iso_ms(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z``, the timestamp shape of every resource."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def parse_iso(text: str) -> datetime:
    """Parse a timestamp written by ``iso_ms`` (or any ISO 8601 form Python accepts)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def later_than(previous: str, now: datetime) -> str:
    """``now`` as a timestamp, nudged past ``previous`` so that updatedAt always moves."""
    try:
        floor = parse_iso(previous) + timedelta(milliseconds=1)
    except ValueError:
        return iso_ms(now)
    return iso_ms(max(now, floor))


@dataclass(frozen=True)
class Identity:
    """One caller: the organization it belongs to and its credentials for both interfaces."""

    organization_id: str
    key_id: str
    key_secret: str
    token: str


# The demo credentials used when the environment sets none: these, and only these, may be
# printed at start-up (a secret read from the environment never is).
DEMO_KEY_ID = "demo-key-id"
DEMO_KEY_SECRET = "demo-key-secret"
DEMO_TOKEN = "demo-dashboards-token"


class Identities:
    """The known callers, and the header checks of both interfaces."""

    def __init__(self, demo: Identity, other: Identity):
        self.demo = demo
        self.other = other

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Identities:
        """Demo credentials from the client's variables (with fixed defaults), plus the other org."""
        env = os.environ if env is None else env
        demo = Identity(
            DEMO_ORG_ID,
            env.get("RECONCILE_KEY_ID") or DEMO_KEY_ID,
            env.get("RECONCILE_KEY_SECRET") or DEMO_KEY_SECRET,
            env.get("RECONCILE_DASHBOARDS_TOKEN") or DEMO_TOKEN,
        )
        other = Identity(OTHER_ORG_ID, "other-key-id", "other-key-secret", "other-dashboards-token")
        return cls(demo, other)

    def basic(self, header: str | None) -> Identity:
        """The identity of a management request's ``Authorization: Basic`` header, or a 401."""
        key_id, secret = basic_pair(header)
        if key_id is None or secret is None:
            raise ApiError(401, "Key is not found")
        for ident in (self.demo, self.other):
            if hmac.compare_digest(key_id, ident.key_id) and hmac.compare_digest(
                secret, ident.key_secret
            ):
                return ident
        raise ApiError(401, "Key is not found")

    def bearer(self, header: str | None) -> Identity:
        """The identity of a dashboards request's ``Authorization: Bearer`` header, or a 401."""
        scheme, _, token = (header or "").partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            for ident in (self.demo, self.other):
                if hmac.compare_digest(token, ident.token):
                    return ident
        raise ApiError(401, "Unauthorized")


def basic_pair(header: str | None) -> tuple[str | None, str | None]:
    """Decode a Basic header into (key id, secret); (None, None) when it is not one."""
    scheme, _, encoded = (header or "").partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return None, None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    key_id, sep, secret = decoded.partition(":")
    if not sep:
        return None, None
    return key_id, secret
