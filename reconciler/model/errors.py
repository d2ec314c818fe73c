"""The exception tree of reconcile.

Every failure the tool can explain is a ``ReconcileError``. Branches carry the fields their
message is built from (file/line for manifests, status/requestId for the API), so renderers
and the CLI never parse message strings. The CLI maps the tree to exit codes in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ReconcileError(Exception):
    """Root of every error reconcile reports to a user."""

    exit_code = 1

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-friendly description of the error."""
        return {"type": type(self).__name__, "message": str(self)}


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

    def _build(self) -> str:
        where = str(self.location)
        if self.path:
            return f"{where}: {self.path}: {self.message}"
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, object]:
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

    def to_dict(self) -> dict[str, object]:
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
        head = self.resource or (f"{self.method} {self.path}" if self.method else "request")
        status = f"HTTP {self.status}" if self.status is not None else "no response"
        text = f"{head}: {status}"
        if self.message:
            text += f": {self.message}"
        if self.request_id:
            text += f" (requestId {self.request_id})"
        return text

    def with_resource(self, resource: str) -> ApiError:
        """Return a copy of the same type naming ``resource`` (e.g. ``pipe orders``)."""
        return type(self)(
            status=self.status,
            message=self.message,
            request_id=self.request_id,
            code=self.code,
            resource=resource,
            method=self.method,
            path=self.path,
        )

    def to_dict(self) -> dict[str, object]:
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


class RedirectRefused(ApiError):
    """The server answered with a redirect, which is never followed (credentials stay put)."""


class ResponseTooLarge(ApiError):
    """A response body above the configured size cap; reading stopped at the cap."""


class DeadlineExceeded(ApiError):
    """An attempt did not complete (headers and whole body) within its deadline."""


class PlanError(ReconcileError):
    """A resource whose desired state cannot be planned (or a saved plan that cannot be used)."""


class StateError(ReconcileError):
    """The state file is unreadable, of a newer format, or locked by another run."""


class ConfigError(ReconcileError):
    """Bad options or environment: missing credentials, insecure URL, unknown target."""
