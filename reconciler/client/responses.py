"""Reading answers: a response becomes its payload and a ``RequestRecord``, or a typed error.

Management answers are wrapped in ``{status, requestId, result}``, dashboards answers in
``{data}``. Errors become the ``ApiError`` branch chosen by status, carrying the server's
code, message and requestId; a failure that never got an answer becomes a plain ``ApiError``
naming the transport error and where it was going.

With ``decode=False`` (``Client.get``) a successful answer is returned as ``Undecoded`` (its body kept
as bytes) and decoded by its reader when its turn comes: the fetcher keeps the next large pipe
list so while it plans the current one, without holding two parsed lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from reconciler.client.config import MANAGEMENT
from reconciler.model.apierrors import ApiError, MalformedAnswer, api_error_type
from reconciler.model.json import JsonValue

__all__ = ["RequestRecord", "Undecoded"]


@dataclass
class RequestRecord:
    """One completed request, for summaries and per-action results."""

    interface: str
    method: str
    path: str
    status: int | None
    request_id: str | None
    attempts: int


def parse_error(interface: str, response: httpx.Response, method: str, path: str) -> ApiError:
    status = response.status_code
    request_id: str | None = None
    code: str | None = None
    message = ""
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        raw_id = body.get("requestId")
        request_id = raw_id if isinstance(raw_id, str) else None
        text = body.get("error") if interface == MANAGEMENT else body.get("message")
        if text is None:
            text = body.get("error") or body.get("message")
        if isinstance(text, str):
            head, sep, rest = text.partition(":")
            if sep and head.replace("_", "").isalpha() and head.isupper():
                code, message = head, rest.strip()
            else:
                message = text
    if not message:
        # A 401 has an empty body; the variables to check are named once, by the
        # AuthenticationFailed error every 401 becomes (client.health).
        message = response.reason_phrase or ("Unauthorized" if status == 401 else "error")
    return api_error_type(status)(
        status=status, message=message, request_id=request_id, code=code, method=method, path=path
    )


def transport_error(exc: Exception, method: str, path: str) -> ApiError:
    """Return the error of an attempt that got no answer, naming where it was going."""
    reason = type(exc).__name__
    detail = str(exc)
    request = getattr(exc, "_request", None)
    if isinstance(request, httpx.Request):
        detail = (
            f"{detail} ({request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')})"
        )
    return ApiError(
        status=None,
        message=f"{reason}: {detail}" if detail else reason,
        method=method,
        path=path,
    )


@dataclass(frozen=True)
class Undecoded:
    """A successful answer whose body is still bytes; ``payload`` decodes it as ``unwrap`` would."""

    interface: str
    status: int
    method: str
    path: str
    content: bytes
    attempts: int = 1

    def payload(self) -> tuple[JsonValue, RequestRecord]:
        """Return the envelope's member and the request's record (its requestId read now), or
        raise the error ``unwrap`` would have raised."""
        member, request_id = _envelope(
            self.interface, self.status, self.content, self.method, self.path
        )
        record = RequestRecord(
            self.interface, self.method, self.path, self.status, request_id, self.attempts
        )
        return member, record


def unwrap(
    interface: str,
    response: httpx.Response,
    method: str,
    path: str,
    attempts: int,
    *,
    decode: bool = True,
) -> tuple[JsonValue | Undecoded, RequestRecord]:
    """Return a response's payload (its envelope's member) and its record, or raise its error.

    Without ``decode``, a successful answer's payload is an ``Undecoded`` (body still bytes).
    """
    status = response.status_code
    if status >= 400:
        raise parse_error(interface, response, method, path)
    if not decode:
        undecoded = Undecoded(interface, status, method, path, response.content, attempts)
        return undecoded, RequestRecord(interface, method, path, status, None, attempts)
    payload, request_id = _envelope(interface, status, response.content, method, path)
    return payload, RequestRecord(interface, method, path, status, request_id, attempts)


def _envelope(
    interface: str, status: int, content: bytes, method: str, path: str
) -> tuple[JsonValue, str | None]:
    """Decode a successful body: its envelope's member and (management) its requestId."""
    try:
        body: JsonValue = json.loads(content)  # what httpx's ``Response.json`` does
    except ValueError:
        raise MalformedAnswer(
            status=status, message="response is not JSON", method=method, path=path
        ) from None
    member = "result" if interface == MANAGEMENT else "data"
    if not isinstance(body, dict) or member not in body:
        raise MalformedAnswer(
            status=status,
            message=f"response has no '{member}' envelope",
            method=method,
            path=path,
        )
    request_id: str | None = None
    if interface == MANAGEMENT:
        raw_id = body.get("requestId")
        request_id = raw_id if isinstance(raw_id, str) else None
    return body[member], request_id
