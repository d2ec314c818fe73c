"""The API branch of the exception tree: what a request to the service can end in.

``ApiError`` is one request the server refused or that could not be completed; its typed
branches are chosen by HTTP status (``api_error_type``) or by how the attempt failed
(redirect refused, body too large, deadline passed, never sent). Beside it stand the errors
that end a whole run's talk with an interface rather than one request: ``InterfaceDown``
(with ``Delivery``, what became of the request it cut off), ``ServiceUnreachable`` and
``AuthenticationFailed``. Each carries the fields its message is built from (status,
requestId, interface, URL), so renderers and the CLI never parse message strings. The root
``ReconcileError`` and the other branches live in ``reconciler.model.errors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar

from reconciler.model.errors import ReconcileError
from reconciler.model.json import JsonLike
from reconciler.model.text import MAX_SERVER_MESSAGE, shown

__all__ = [
    "ApiError",
    "AuthError",
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "DeadlineExceeded",
    "Delivery",
    "InterfaceDown",
    "MalformedAnswer",
    "MethodNotAllowed",
    "NotFound",
    "NotSent",
    "RateLimited",
    "RedirectRefused",
    "ResponseTooLarge",
    "ServiceUnreachable",
    "Unsupported",
    "api_error_type",
]


class ApiError(ReconcileError):
    """A request the server refused or that could not be completed."""

    def __init__(
        self,
        *,
        status: int | None,
        message: str,
        request_id: str | None = None,
        code: str | None = None,
        resource: str | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.request_id = request_id
        self.code = code
        self.resource = resource
        self.method = method
        self.path = path
        super().__init__(self._build())

    def _build(self) -> str:
        # The server's words, escaped and cut (``model.text``): this sentence is what terminals
        # and text logs show; ``to_dict`` keeps the message whole for JSON.
        head = self.resource or (f"{self.method} {self.path}" if self.method else "request")
        status = f"HTTP {self.status}" if self.status is not None else "no response"
        text = f"{shown(head)}: {status}"
        if self.message:
            text += f": {shown(self.message, MAX_SERVER_MESSAGE)}"
        if self.request_id:
            text += f" (requestId {shown(self.request_id)})"
        return text

    def with_resource(self, resource: str) -> ApiError:
        """Return a copy of the same type naming ``resource`` (e.g. ``pipe orders``)."""
        return self._copy(type(self), resource=resource)

    def as_type(self, cls: type[ApiError]) -> ApiError:
        """Return a copy of this error as another branch of the tree (same fields)."""
        return self._copy(cls, resource=self.resource)

    def _copy(self, cls: type[ApiError], *, resource: str | None) -> ApiError:
        return cls(
            status=self.status,
            message=self.message,
            request_id=self.request_id,
            code=self.code,
            resource=resource,
            method=self.method,
            path=self.path,
        )

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the error's fields."""
        return {
            "type": "ApiError",
            "status": self.status,
            "requestId": self.request_id,
            "code": self.code,
            "message": self.message,
            "resource": self.resource,
            "method": self.method,
            "path": self.path,
        }


class BadRequest(ApiError):
    """400: the server rejected the request body."""


class AuthError(ApiError):
    """401/403: the credentials are missing, wrong, or not allowed to do this."""


class NotFound(ApiError):
    """404: the object (or, on an optional endpoint, the endpoint itself) does not exist."""


class MethodNotAllowed(ApiError):
    """405: the path exists but not with this method."""


class Conflict(ApiError):
    """409: the request conflicts with the object's current state."""


class FailedDependency(ApiError):
    """424: something the request depends on is not ready (e.g. an idle service)."""


class RateLimited(ApiError):
    """429: the request budget of the key is spent (after the client's own retries)."""


class ServerError(ApiError):
    """5xx: the server failed; reads were retried before this was raised."""


class Unsupported(ApiError):
    """An optional endpoint (the real service's extensions) that this server does not offer.

    Raised instead of ``NotFound``/``MethodNotAllowed`` when the caller marked the request
    ``optional``: the caller then falls back to what the spec guarantees.
    """


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: AuthError,
    403: AuthError,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    424: FailedDependency,
    429: RateLimited,
}


def api_error_type(status: int | None) -> type[ApiError]:
    """Return the ``ApiError`` branch for an HTTP status (``ApiError`` itself when none fits)."""
    if status is None:
        return ApiError
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


class RedirectRefused(ApiError):
    """The server answered with a redirect, which is never followed (credentials stay put)."""


class ResponseTooLarge(ApiError):
    """A response body above the configured size cap; reading stopped at the cap."""


class MalformedAnswer(ApiError):
    """A successful answer whose body is not what the request documents (e.g. a list read
    whose ``result`` is null, or holds items without ``id``): read as nothing, never as "none"."""


class DeadlineExceeded(ApiError):
    """An attempt did not complete (headers and whole body) within its deadline."""


class NotSent(ApiError):
    """A request whose every attempt was a refused connection: it never reached the server."""

    def _build(self) -> str:
        return super()._build().replace(": no response", ": not sent", 1)


class Delivery(StrEnum):
    """What became of a request that an interface's giving up ended."""

    NOT_SENT = "not-sent"  # no attempt reached the server (refused connection, or not started)
    REFUSED = "refused"  # every attempt was answered 429/503: the server did nothing
    UNKNOWN = "unknown"  # an attempt may have reached the server: it may have taken effect


class InterfaceDown(ReconcileError):
    """An interface stopped answering: the run sends nothing more to it.

    Raised once the interface has spent the run's retry budget without a single success, or
    refused connections for a few seconds after it had answered. Not an ``ApiError``: no
    resource's handler records it as its own failure, so a plan stops with this one message;
    apply reports each action it cut off by ``delivery`` (not sent, refused, unknown).
    """

    fields: ClassVar[Mapping[str, str]] = {
        "interface": "interface",
        "url": "url",
        "why": "why",
        "lastAnswer": "last_answer",
    }

    def __init__(
        self,
        *,
        interface: str,
        url: str,
        why: str,
        last_answer: str,
        delivery: Delivery = Delivery.NOT_SENT,
    ) -> None:
        self.interface, self.url, self.why = interface, url, why
        self.last_answer, self.delivery = last_answer, delivery
        super().__init__(
            f"the {interface} API at {url} stopped answering: {why}; its last answer: "
            f"{shown(last_answer, MAX_SERVER_MESSAGE)}. Nothing more is sent to it in this run"
        )

    def with_delivery(self, delivery: Delivery) -> InterfaceDown:
        """Return the same error, saying what became of one request."""
        if delivery is self.delivery:
            return self
        same = {attribute: getattr(self, attribute) for attribute in self.fields.values()}
        return InterfaceDown(**same, delivery=delivery)


class ServiceUnreachable(ReconcileError):
    """The first request to an interface never reached a server: refused, TLS, name lookup."""

    def __init__(self, *, interface: str, url: str, reason: str, variable: str) -> None:
        self.interface = interface
        self.url = url
        self.reason = reason
        self.variable = variable
        super().__init__(
            f"cannot reach the {interface} API at {url}: {reason}. Check {variable}; "
            "not retried, because no request has reached the server yet"
        )


class AuthenticationFailed(AuthError):
    """The server refused the credentials (401, or 403 before anything succeeded): stop the run.

    A branch of ``AuthError`` (so ``except AuthError`` sees every refusal), but not one
    resource's error: it names no resource, naming one returns it unchanged, and the handlers
    that record a resource's ``ApiError`` and carry on re-raise it first, so the run stops with
    this one message.
    """

    def __init__(
        self, *, interface: str, status: int, detail: str, request_id: str | None, variables: str
    ) -> None:
        self.interface = interface
        self.variables = variables
        super().__init__(status=status, message=detail, request_id=request_id)

    @property
    def detail(self) -> str:
        """The server's own message."""
        return self.message

    def _build(self) -> str:
        rid = f", requestId {shown(self.request_id)}" if self.request_id else ""
        return (
            f"the {self.interface} API refused the credentials (HTTP {self.status}{rid}: "
            f"{shown(self.message, MAX_SERVER_MESSAGE)}). Check {self.variables}; the run stopped at the first refusal"
        )

    def _copy(self, cls: type[ApiError], *, resource: str | None) -> ApiError:
        return self  # one error for the whole run: the same object, whatever asks for a copy

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the API error's fields (no request's method or path) and the interface."""
        fields = {k: v for k, v in super().to_dict().items() if k not in ("method", "path")}
        return {**fields, "type": "AuthenticationFailed", "interface": self.interface}
