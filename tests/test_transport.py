"""The lean HTTP/1.1 transport: keep-alive reuse, its connection bound, every failure typed as httpx's,
and ``written`` (the requests just started have left before the caller blocks the loop).

Each test starts a raw asyncio server on loopback that counts the connections it accepts and
answers with one behaviour (a normal answer, a stall, a close, garbage); the transport is
driven through ``httpx.AsyncClient`` exactly as ``Client`` drives it.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trustme

import reconciler
from reconciler.client.api import Client
from reconciler.client.transport import LeanTransport, environment_proxies
from reconciler.model.errors import NotFound
from tests.support.asgi import config as client_config
from tests.support.emulator import Emulator
from tests.support.manifests import EXAMPLES, set_example_secrets

REPO = Path(__file__).resolve().parent.parent

Behaviour = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """Read one request (head and Content-Length body); b"" at end of stream."""
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + (await reader.readexactly(length) if length else b"")


def answer(body: bytes, *extra: bytes) -> bytes:
    """A complete 200 answer with ``body``."""
    headers = b"".join(h + b"\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), headers, body)


class Server:
    """Counts connections; at most how many were open at once; hands each to a behaviour."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await self.behaviour(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open -= 1
            writer.close()


@asynccontextmanager
async def serving(behaviour: Behaviour) -> AsyncIterator[Server]:
    server = Server(behaviour)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()


async def echo_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer every request on the connection with its own body (keep-alive)."""
    while True:
        request = await read_request(reader)
        if not request:
            return
        await asyncio.sleep(0.01)
        writer.write(answer(request.split(b"\r\n\r\n", 1)[1] or b"ok"))
        await writer.drain()


def client(server: Server, **options: float) -> httpx.AsyncClient:
    transport = LeanTransport(max_connections=int(options.pop("max_connections", 4)))
    return httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{server.port}",
        transport=transport,
        timeout=httpx.Timeout(options.pop("timeout", 5.0), pool=options.pop("pool", 5.0)),
    )


def test_sequential_requests_should_reuse_one_connection() -> None:
    async def scenario() -> None:
        async with serving(echo_forever) as server, client(server) as http:
            bodies = [(await http.post("/x", content=f"n{i}")).text for i in range(20)]
            assert bodies == [f"n{i}" for i in range(20)]
            assert server.accepted == 1

    asyncio.run(scenario())


def test_concurrent_requests_should_never_open_more_than_the_bound() -> None:
    async def scenario() -> None:
        async with serving(echo_forever) as server, client(server, max_connections=3) as http:
            answers = await asyncio.gather(*(http.get(f"/{i}") for i in range(30)))
            assert all(a.status_code == 200 for a in answers)
            assert server.most_open <= 3
            assert server.accepted == 3

    asyncio.run(scenario())


def test_a_refused_connection_should_be_a_connect_error_caused_by_the_os_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there

    async def scenario() -> None:
        async with httpx.AsyncClient(transport=LeanTransport()) as http:
            with pytest.raises(httpx.ConnectError) as caught:
                await http.get(f"http://127.0.0.1:{port}/")
        cause = caught.value.__cause__
        assert isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED

    asyncio.run(scenario())


def test_a_server_that_never_answers_should_raise_a_read_timeout() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def scenario() -> None:
        async with serving(stall) as server, client(server, timeout=0.2) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.get("/")

    asyncio.run(scenario())


def test_a_connection_the_server_closed_while_idle_should_be_replaced() -> None:
    async def one_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"once"))
        await writer.drain()

    async def scenario() -> None:
        async with serving(one_then_close) as server, client(server) as http:
            for _ in range(3):
                assert (await http.get("/")).text == "once"
                await asyncio.sleep(0.05)  # the server's close arrives while idle
            assert server.accepted == 3

    asyncio.run(scenario())


def test_a_connection_close_answer_should_not_be_reused() -> None:
    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"bye", b"Connection: close"))
        await writer.drain()
        await asyncio.sleep(1)  # the client must not wait for this close to send again

    async def scenario() -> None:
        async with serving(closing) as server, client(server) as http:
            assert [(await http.get("/")).text for _ in range(3)] == ["bye"] * 3
            assert server.accepted == 3

    asyncio.run(scenario())


def test_a_body_left_half_read_should_close_its_connection() -> None:
    async def scenario() -> None:
        async with serving(echo_forever) as server, client(server) as http:
            async with http.stream("POST", "/", content=b"x" * 200_000) as response:
                async for _ in response.aiter_raw(1024):
                    break
            assert (await http.get("/")).text == "ok"
            assert server.accepted == 2

    asyncio.run(scenario())


def test_garbage_instead_of_an_answer_should_be_a_remote_protocol_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SMTP ready\r\n\r\n")
        await writer.drain()

    async def scenario() -> None:
        async with serving(garbage) as server, client(server) as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get("/")

    asyncio.run(scenario())


@pytest.mark.parametrize("cut", [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"])
def test_a_connection_lost_before_the_answer_ends_should_be_a_transport_error(cut: bytes) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(cut)
        await writer.drain()

    async def scenario() -> None:
        async with serving(hang_up) as server, client(server) as http:
            with pytest.raises(httpx.TransportError):
                await http.get("/")

    asyncio.run(scenario())


def test_waiting_for_a_connection_longer_than_the_pool_timeout_should_raise_pool_timeout() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(1)
        writer.write(answer(b"late"))
        await writer.drain()

    async def scenario() -> None:
        async with serving(slow) as server, client(server, max_connections=1, pool=0.1) as http:
            first = asyncio.create_task(http.get("/"))
            await asyncio.sleep(0.05)
            with pytest.raises(httpx.PoolTimeout):
                await http.get("/")
            assert (await first).text == "late"

    asyncio.run(scenario())


def test_a_cancelled_request_should_free_its_place_in_the_pool() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await read_request(reader):
            await asyncio.sleep(0.3)
            writer.write(answer(b"done"))
            await writer.drain()

    async def scenario() -> None:
        async with serving(slow) as server, client(server, max_connections=1) as http:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await http.get("/")
            assert (await http.get("/")).text == "done"

    asyncio.run(scenario())


def test_the_client_should_use_the_lean_transport_unless_a_proxy_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = client_config()
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    assert not environment_proxies()
    lean = Client(config)
    assert all(isinstance(h._transport, LeanTransport) for h in lean._http.values())
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert environment_proxies()
    proxied = Client(config)
    assert not any(isinstance(h._transport, LeanTransport) for h in proxied._http.values())


def test_a_plan_through_either_transport_should_be_the_same(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # httpx's own transport still carries every request when a proxy is configured.
    set_example_secrets(monkeypatch)
    config = client_config(
        base_url=emulator.url,
        dashboards_url=emulator.url,
        key_id=emulator.key_id,
        key_secret=emulator.key_secret,
        dashboards_token=emulator.token,
    )
    scope = reconciler.Scope(paths=(str(EXAMPLES),), state=str(tmp_path / "s.json"))

    missing = "00000000-0000-4000-8000-000000000000"

    async def plan_and_miss(transport: httpx.AsyncBaseTransport | None) -> tuple[str, object]:
        plan = await reconciler.compute_plan(config, scope, transport=transport)
        async with Client(config, transport=transport) as client:
            with pytest.raises(NotFound) as caught:
                await client.get(
                    f"/v1/organizations/{emulator.org_id}/services/{missing}/pipes/{missing}"
                )
        error = caught.value
        return reconciler.render_text(plan.plan), (error.status, error.message, error.path)

    lean = asyncio.run(plan_and_miss(None))
    own = asyncio.run(plan_and_miss(httpx.AsyncHTTPTransport()))
    assert lean == own
    assert "~" in lean[0] or "+" in lean[0]  # the example manifests differ from the seed


def _tls_pair() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1, and a client context trusting it."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


@asynccontextmanager
async def serving_tls(behaviour: Behaviour, context: ssl.SSLContext) -> AsyncIterator[Server]:
    server = Server(behaviour)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=context)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()


def test_https_should_verify_the_certificate_and_reuse_the_connection() -> None:
    server_context, trusting = _tls_pair()

    async def scenario() -> None:
        async with serving_tls(echo_forever, server_context) as server:
            url = f"https://127.0.0.1:{server.port}/"
            transport = LeanTransport(ssl_context=trusting)
            async with httpx.AsyncClient(transport=transport) as http:
                assert [(await http.post(url, content=b"tls")).text for _ in range(3)] == [
                    "tls"
                ] * 3
            assert server.accepted == 1

    asyncio.run(scenario())


def test_https_to_an_untrusted_certificate_should_be_a_connect_error_caused_by_tls() -> None:
    server_context, _ = _tls_pair()

    async def scenario() -> None:
        async with serving_tls(echo_forever, server_context) as server:
            transport = LeanTransport(ssl_context=ssl.create_default_context())
            async with httpx.AsyncClient(transport=transport) as http:
                with pytest.raises(httpx.ConnectError) as caught:
                    await http.get(f"https://127.0.0.1:{server.port}/")
        assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)

    asyncio.run(scenario())


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_an_ipv6_literal_url_should_connect() -> None:
    async def scenario() -> None:
        server = Server(echo_forever)
        listener = await asyncio.start_server(server.handle, "::1", 0)
        port = listener.sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient(transport=LeanTransport()) as http:
                assert (await http.post(f"http://[::1]:{port}/", content=b"six")).text == "six"
        finally:
            listener.close()

    asyncio.run(scenario())


class HoldingServer:
    """A server in its own thread: notes when each request's head arrives, answers on release."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.arrivals: list[float] = []
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        def one(conn: socket.socket) -> None:
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                self.arrivals.append(time.monotonic())
                self.release.wait(10)
                conn.sendall(answer(b"ok"))

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.listener.close()


def test_written_should_return_once_the_requests_just_started_are_on_the_wire() -> None:
    # A caller about to run CPU-bound work on the event loop (decoding a list, planning)
    # first lets the requests it just started leave: new connections need the loop to open.
    server = HoldingServer()

    async def scenario() -> float:
        transport = LeanTransport(max_connections=4)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{server.port}", transport=transport, timeout=10
        ) as http:
            tasks = [asyncio.create_task(http.get(f"/{i}")) for i in range(3)]
            await asyncio.sleep(0)
            await transport.written()
            blocked_until = time.monotonic() + 0.3
            time.sleep(0.3)  # the loop is busy: nothing more can be written meanwhile
            server.release.set()
            answers = await asyncio.gather(*tasks)
            assert [a.status_code for a in answers] == [200, 200, 200]
            return blocked_until

    try:
        blocked_until = asyncio.run(scenario())
    finally:
        server.close()
    assert len(server.arrivals) == 3
    assert max(server.arrivals) < blocked_until  # every request arrived while the loop was busy


def test_written_should_return_at_once_when_nothing_is_being_sent() -> None:
    async def scenario() -> None:
        transport = LeanTransport()
        await asyncio.wait_for(transport.written(), 1)

    asyncio.run(scenario())
