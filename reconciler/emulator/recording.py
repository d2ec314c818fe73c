"""An exchange recorder: every request and answer appended to a JSON Lines file, for tests.

When ``RECONCILE_EMULATOR_CONTRACT_LOG`` names a file, the emulator (in-process or a server
process) appends one line per answered request: method, path, query string, the caller's
User-Agent, the request body and the answer's status and body. The test suite reads the file to
judge each exchange against the service's contract; the emulator itself judges nothing (it
shares no code with the client side, and the oracle lives with the tests). Each line is written
with one ``write`` on a file opened for appending, so processes sharing the file never
interleave their lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__: list[str] = []


ENV = "RECONCILE_EMULATOR_CONTRACT_LOG"

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Recorder:
    """Appends exchanges to one JSON Lines file."""

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def from_env(cls) -> Recorder | None:
        """A recorder on the file the environment names, or None when it names none."""
        path = os.environ.get(ENV)
        return cls(path) if path else None

    def wrap(
        self, scope: MutableMapping[str, Any], receive: Receive, send: Send
    ) -> tuple[Receive, Send]:
        """The request's receive and send, wrapped to capture both bodies and write the line."""
        request: list[bytes] = []
        response: list[bytes] = []
        status: list[int] = []

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                request.append(message.get("body", b""))
            return message

        async def sending(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            elif message["type"] == "http.response.body":
                response.append(message.get("body", b""))
                if not message.get("more_body", False) and status:
                    self.write(scope, b"".join(request), status[0], b"".join(response))

        return receiving, sending

    def write(
        self, scope: MutableMapping[str, Any], request: bytes, status: int, response: bytes
    ) -> None:
        """Append one exchange."""
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        line: dict[str, Any] = {
            "method": scope.get("method", ""),
            "path": scope.get("path", ""),
            "query": scope.get("query_string", b"").decode("latin-1"),
            "agent": headers.get("user-agent", ""),
            "status": status,
        }
        for key, body in (("request", request), ("response", response)):
            value, text = _parsed(body)
            line[key] = value
            if text is not None:
                line[key + "Text"] = text
        data = (json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _parsed(body: bytes) -> tuple[Any, str | None]:
    """(the JSON value, None), or (None, the text) for a body that is not JSON."""
    if not body:
        return None, None
    try:
        return json.loads(body), None
    except (ValueError, RecursionError):
        return None, body.decode("utf-8", "replace")
