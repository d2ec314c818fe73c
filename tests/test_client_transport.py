"""The client's HTTP transport is httpx's own: keep-alive reuse, the ``--parallelism`` bound on
connections, proxies named by the environment, certificates verified, IPv6 literals, and bodies
that are compressed or answered as JSON read the same as before.

Each test starts a raw asyncio server on loopback that counts the connections it accepts and
answers every request with a JSON envelope naming the request's target, and drives it through
``Client`` exactly as a run does.
"""

from __future__ import annotations

import ast
import asyncio
import gzip
import json
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trustme

import reconciler.client
from reconciler.client.api import Client
from reconciler.model.apierrors import ServiceUnreachable
from tests.support.asgi import config as client_config

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


class EnvelopeServer:
    """Answers each request with ``{"result": {"target": …}}``; counts its connections."""

    def __init__(self, *, compress: bool = False) -> None:
        self.compress = compress
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self.targets: list[str] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            while not reader.at_eof():
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ")[1].decode()
                self.targets.append(target)
                await asyncio.sleep(0.01)
                body = json.dumps({"result": {"target": target}}).encode()
                extra = b""
                if self.compress:
                    body, extra = gzip.compress(body), b"Content-Encoding: gzip\r\n"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
                    b"Content-Length: %d\r\n\r\n%s" % (extra, len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open -= 1
            writer.close()


@asynccontextmanager
async def serving(
    server: EnvelopeServer, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
) -> AsyncIterator[EnvelopeServer]:
    listener = await asyncio.start_server(server.handle, host, 0, ssl=tls)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_sequential_requests_reuse_one_connection() -> None:
    async def scenario() -> None:
        async with serving(EnvelopeServer()) as server:
            url = f"http://127.0.0.1:{server.port}"
            async with Client(client_config(base_url=url)) as client:
                results = [await client.get(f"/v1/n{i}") for i in range(10)]
        assert results == [{"target": f"/v1/n{i}"} for i in range(10)]
        assert server.accepted == 1

    asyncio.run(scenario())


@pytest.mark.parametrize("parallelism", [1, 3])
def test_concurrent_requests_never_open_more_connections_than_the_parallelism(
    parallelism: int,
) -> None:
    async def scenario() -> None:
        async with serving(EnvelopeServer()) as server:
            url = f"http://127.0.0.1:{server.port}"
            async with Client(client_config(base_url=url, parallelism=parallelism)) as client:
                await asyncio.gather(*(client.get(f"/v1/{i}") for i in range(20)))
        assert len(server.targets) == 20
        assert server.most_open <= parallelism

    asyncio.run(scenario())


def test_a_compressed_answer_is_read_as_its_json() -> None:
    async def scenario() -> None:
        async with serving(EnvelopeServer(compress=True)) as server:
            url = f"http://127.0.0.1:{server.port}"
            async with Client(client_config(base_url=url)) as client:
                assert await client.get("/v1/zipped") == {"target": "/v1/zipped"}

    asyncio.run(scenario())


def test_a_proxy_named_by_the_environment_carries_the_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(EnvelopeServer()) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            config = client_config(base_url="http://api.example.invalid", insecure=True)
            async with Client(config) as client:
                await client.get("/v1/organizations")
        # A proxy is sent the absolute URL: the request went through it, not to the host.
        assert proxy.targets == ["http://api.example.invalid/v1/organizations"]

    asyncio.run(scenario())


def test_https_to_an_untrusted_certificate_is_unreachable_naming_tls() -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)

    async def scenario() -> str:
        async with serving(EnvelopeServer(), tls=server_context) as server:
            url = f"https://127.0.0.1:{server.port}"
            async with Client(client_config(base_url=url, dashboards_url=url)) as client:
                with pytest.raises(ServiceUnreachable) as caught:
                    await client.get("/v1/organizations")
        return str(caught.value)

    message = asyncio.run(scenario())
    assert "TLS handshake failed" in message
    assert "not retried" in message


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_an_ipv6_literal_url_connects() -> None:
    async def scenario() -> None:
        async with serving(EnvelopeServer(), host="::1") as server:
            url = f"http://[::1]:{server.port}"
            async with Client(client_config(base_url=url)) as client:
                assert await client.get("/v1/six") == {"target": "/v1/six"}

    asyncio.run(scenario())


def test_the_client_writes_no_private_attribute_of_another_object() -> None:
    # httpx's private state (``response._content``, a transport's pool) is not ours to set:
    # a response whose body was read under the cap is built anew through httpx's public API.
    written = []
    for source in sorted(Path(reconciler.client.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr.startswith("_")
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                ):
                    written.append(f"{source.name}:{node.lineno} {ast.unparse(target)}")
    assert written == []
