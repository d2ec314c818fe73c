"""A lean HTTP/1.1 transport for httpx: asyncio streams, h11 for the protocol, a LIFO pool.

httpx's default transport (httpcore over anyio) costs about twice the CPU per request of the
exchange itself: at ``--parallelism 16`` on two cores, the client's CPU, not the network,
became the bound of a 1,000-pipe plan (``bench/plan_scale.py``, rows 3 and H). This transport
keeps httpx for everything above the wire - URLs, headers, auth, redirects refused, the
exception tree, streamed bodies - and replaces only the connection pool:

- one origin per transport (a ``Client`` builds one per interface); at most ``max_connections``
  open at once, idle ones reused newest first and dropped after ``keepalive`` seconds or
  when the server has closed them;
- httpx's four timeouts (``connect``, ``read``, ``write``, ``pool``) each raise the httpx
  exception of that name; a refused or failed connection raises ``httpx.ConnectError`` with
  the ``OSError`` as its cause, a malformed answer ``httpx.RemoteProtocolError``, a connection
  lost mid-answer ``httpx.ReadError``;
- a body not read to its end closes its connection (it is never reused half-read).

It speaks neither HTTP/2 nor proxies: ``Client`` keeps httpx's default transport when a proxy
is configured in the environment.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.request import getproxies

import h11
import httpx

__all__ = ["LeanTransport", "basic_authorization", "environment_proxies"]

_READ_SIZE = 64 * 1024


def basic_authorization(user: str, password: str) -> str:
    """Return the ``Authorization`` value of HTTP basic auth, as ``httpx.BasicAuth`` builds it."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def environment_proxies() -> bool:
    """Tell whether the environment names a proxy (httpx's own transport then speaks to it)."""
    return any(scheme in ("http", "https", "all") for scheme in getproxies())


class _Connection:
    """One keep-alive connection: its streams and its h11 state machine."""

    __slots__ = ("h11", "idle_since", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.idle_since = 0.0

    def reusable(self, now: float, keepalive: float) -> bool:
        """Tell whether this idle connection can carry another request."""
        return (
            now - self.idle_since < keepalive
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    def close(self) -> None:
        """Close the socket (no goodbye is owed on HTTP/1.1)."""
        self.writer.close()


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection; the connection returns to the pool at the end."""

    def __init__(self, pool: LeanTransport, conn: _Connection, read_timeout: float | None) -> None:
        self._pool = pool
        self._conn: _Connection | None = conn
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if conn is None:
            return
        while True:
            event = await self._pool._next_event(conn, self._read_timeout)
            if type(event) is h11.Data:
                yield bytes(event.data)
            elif type(event) is h11.EndOfMessage:
                self._conn = None
                self._pool._release(conn)
                return

    async def aclose(self) -> None:
        if self._conn is not None:  # not read to the end: the connection cannot be reused
            self._pool._discard(self._conn)
            self._conn = None


class LeanTransport(httpx.AsyncBaseTransport):
    """An HTTP/1.1 connection pool for one origin, on asyncio streams and h11."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 16,
        keepalive: float = 4.0,
    ) -> None:
        self._ssl = ssl_context
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max(1, max_connections))
        self._keepalive = keepalive
        self._open: set[_Connection] = set()
        # Requests holding a connection slot whose bytes are not all written yet (``written``).
        self._writing = 0
        self._all_written: asyncio.Event | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeouts.get("pool")):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection in time", request=request) from None
        try:
            self._writing += 1
            try:
                conn = await self._connection(request, timeouts.get("connect"))
                await self._send(conn, request, timeouts.get("write"))
            finally:
                self._writing -= 1
                if not self._writing and self._all_written is not None:
                    self._all_written.set()
            while True:
                event = await self._next_event(conn, timeouts.get("read"), request)
                if type(event) is h11.Response:
                    break
                # h11 passes 1xx informational answers on; the final answer follows.
        except BaseException:
            if "conn" in locals():
                self._discard(conn)
            else:
                self._slots.release()
            raise
        return httpx.Response(
            status_code=event.status_code,
            headers=[(bytes(k), bytes(v)) for k, v in event.headers],
            stream=_Body(self, conn, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": bytes(event.reason)},
            request=request,
        )

    async def written(self) -> None:
        """Return once every request that holds a connection is written (or has failed).

        Its connect and write timeouts bound the wait; requests still waiting for a
        connection are not waited for.
        """
        while self._writing:
            if self._all_written is None or self._all_written.is_set():
                self._all_written = asyncio.Event()
            await self._all_written.wait()

    async def _connection(self, request: httpx.Request, timeout: float | None) -> _Connection:
        """Return the newest live idle connection, or open one."""
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable(now, self._keepalive):
                return conn
            self._open.discard(conn)
            conn.close()
        url = request.url
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        # The ASCII (IDNA) form: what DNS resolves and what a certificate names.
        host = url.raw_host.decode("ascii")
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=(self._ssl or ssl.create_default_context()) if tls else None,
                    server_hostname=host if tls else None,
                    limit=_READ_SIZE,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"no connection within {timeout} s", request=request
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        conn = _Connection(reader, writer)
        self._open.add(conn)
        return conn

    async def _send(self, conn: _Connection, request: httpx.Request, timeout: float | None) -> None:
        """Write the request line, headers and body."""
        headers = list(request.headers.raw)
        if not request.headers.get("Host"):
            headers.insert(0, (b"Host", request.url.netloc))
        target = request.url.raw_path
        body = request.content if isinstance(request.stream, httpx.ByteStream) else None
        if body is None:
            body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        try:
            data = conn.h11.send(h11.Request(method=request.method, target=target, headers=headers))
            parts = [data or b""]
            if body:
                parts.append(conn.h11.send(h11.Data(data=body)) or b"")
            parts.append(conn.h11.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        conn.writer.write(b"".join(parts))
        try:
            async with asyncio.timeout(timeout):
                await conn.writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("request not sent in time", request=request) from None
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc

    async def _next_event(
        self, conn: _Connection, timeout: float | None, request: httpx.Request | None = None
    ) -> Any:
        """Return h11's next event for the answer, reading from the socket as needed."""
        while True:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from exc
            if event is not h11.NEED_DATA:
                if type(event) is h11.ConnectionClosed:
                    raise httpx.RemoteProtocolError(
                        "server closed the connection without answering", request=request
                    )
                return event
            try:
                async with asyncio.timeout(timeout):
                    data = await conn.reader.read(_READ_SIZE)
            except TimeoutError:
                raise httpx.ReadTimeout(
                    "no data within the read timeout", request=request
                ) from None
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
            conn.h11.receive_data(data)

    def _release(self, conn: _Connection) -> None:
        """Return a connection whose exchange is complete to the pool (or close it)."""
        self._slots.release()
        if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
            conn.h11.start_next_cycle()
            conn.idle_since = time.monotonic()
            self._idle.append(conn)
        else:
            self._open.discard(conn)
            conn.close()

    def _discard(self, conn: _Connection) -> None:
        """Close a connection whose exchange did not finish."""
        self._slots.release()
        self._open.discard(conn)
        conn.close()

    async def aclose(self) -> None:
        """Close every connection and wait (briefly) until their sockets are released."""
        writers = [conn.writer for conn in self._open]
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()
        if writers:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await asyncio.gather(
                        *(w.wait_closed() for w in writers), return_exceptions=True
                    )
