"""The exception tree of reconcile.

Every failure the tool can explain is a ``ReconcileError``. Branches carry the fields their
message is built from (file/line for manifests, status/requestId for the API), so renderers
and the CLI never parse message strings. The CLI maps the tree to exit codes in one place.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from reconciler.model.json import JsonLike, JsonMapping
from reconciler.model.text import MAX_SERVER_MESSAGE, shown

__all__ = [
    "ApiError",
    "AuthError",
    "AuthenticationFailed",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "DeadlineExceeded",
    "Delivery",
    "InterfaceDown",
    "Interrupted",
    "Location",
    "MalformedAnswer",
    "ManifestError",
    "ManifestErrors",
    "MethodNotAllowed",
    "NotFound",
    "NotSent",
    "PlanError",
    "RateLimited",
    "ReconcileError",
    "RedirectRefused",
    "ResponseTooLarge",
    "ServiceUnreachable",
    "StateConflictError",
    "StateError",
    "StateLockedError",
    "Unsupported",
    "api_error_type",
    "error_entries",
    "suggest",
]


def suggest(word: object, choices: Iterable[object]) -> str:
    """Return `` (did you mean 'x'?)`` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class ReconcileError(Exception):
    """Root of every error reconcile reports to a user."""

    exit_code = 1
    # What ``to_dict`` gives beside type and message: JSON key -> attribute.
    fields: ClassVar[Mapping[str, str]] = {}

    def to_dict(self) -> dict[str, JsonLike]:
        """Return a JSON-friendly description of the error: type, message and ``fields``."""
        described: dict[str, JsonLike] = {"type": type(self).__name__, "message": str(self)}
        for key, attribute in self.fields.items():
            described[key] = getattr(self, attribute)
        return described


@dataclass(frozen=True)
class Location:
    """A place in a manifest: file, 1-based line and column."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


class ManifestError(ReconcileError):
    """One problem in one manifest, located at file:line:col and a JSON path."""

    def __init__(self, location: Location, path: str, message: str) -> None:
        self.location = location
        self.path = path
        self.message = message
        super().__init__(self._build())

    def __reduce__(self) -> tuple[type[ManifestError], tuple[Location, str, str]]:
        # The default pickling would call __init__ with the message alone (as for any exception).
        return (type(self), (self.location, self.path, self.message))

    def _build(self) -> str:
        # The path and message may quote the manifest: shown escaped (``model.text``).
        where = str(self.location)
        if self.path:
            return f"{where}: {shown(self.path)}: {shown(self.message)}"
        return f"{where}: {shown(self.message)}"

    def to_dict(self) -> dict[str, JsonLike]:
        """Return the error as ``{file, line, col, path, message}``."""
        return {
            "file": self.location.file,
            "line": self.location.line,
            "col": self.location.col,
            "path": self.path,
            "message": self.message,
        }


class ManifestErrors(ReconcileError):
    """Several manifest problems reported together (all at once, nothing sent)."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def to_dict(self) -> dict[str, JsonLike]:
        """Return every error as a list of objects."""
        return {"type": "ManifestErrors", "errors": [e.to_dict() for e in self.errors]}


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


class Interrupted(ReconcileError):
    """A request not sent, or a run ended, because of SIGINT/SIGTERM (``reason`` names it)."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        self.reason = reason
        super().__init__(message or f"not started: apply was interrupted by {reason}")


class PlanError(ReconcileError):
    """A resource whose desired state cannot be planned (or a saved plan that cannot be used)."""


class StateError(ReconcileError):
    """The state file is unreadable, of a newer format, or locked by another run."""


class ConfigError(ReconcileError):
    """Bad options or environment: missing credentials, insecure URL, unknown target."""


class StateLockedError(StateError):
    """Another run holds the state's lock (``holder`` is its record, when it could be read)."""

    fields: ClassVar[Mapping[str, str]] = {
        "state": "location",
        "holder": "holder",
        "waited": "waited",
    }

    def __init__(
        self,
        location: str,
        holder: JsonMapping | None,
        *,
        waited: float = 0.0,
        age: float | None = None,
        stale_hint: bool = False,
    ) -> None:
        self.location = location
        self.holder = dict(holder) if holder else None
        self.waited = waited
        self.age = age
        self.stale_hint = stale_hint
        super().__init__(self._build())

    def _build(self) -> str:
        h = self.holder
        if h:
            who = f"pid {h.get('pid')} on {h.get('host')} (user {h.get('user')}, command {h.get('command')!r})"
            who += f", started {h.get('startedAt')}"
            if self.age is not None:
                who += f" ({_duration(self.age)} ago)"
            who += f", lock ID {h.get('lockId')}"
        else:
            who = "another reconcile run"
        waited = f" after waiting {self.waited:g}s" if self.waited else ""
        text = f"state {self.location} is locked by {who}{waited}; wait for it to finish or pass --lock-timeout SECONDS"
        if self.stale_hint and h:
            text += f". If that run is dead, remove its lock with: reconcile state unlock {h.get('lockId')}"
        return text


class StateConflictError(StateError):
    """A compare-and-set write found the state changed since it was read (nothing was written)."""

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(
            f"state {location} was changed by another writer since this run read it; "
            "nothing was written (this run lost its lock, or the state was edited by hand): run again"
        )


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


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


def error_entries(exc: ReconcileError) -> list[dict[str, JsonLike]]:
    """Return the ``errors[]`` entries of a machine document for ``exc`` (one per manifest problem)."""
    if isinstance(exc, ManifestErrors):
        return [{"type": "ManifestError", **e.to_dict()} for e in exc.errors]
    return [{**exc.to_dict(), "type": type(exc).__name__, "message": str(exc)}]
