"""Real state stores for the tests: a throwaway PostgreSQL cluster and a moto S3 server.

Both are started once per session on free loopback ports and stopped at the end. A missing
PostgreSQL server is a failure, never a skip (``.ci/run`` installs it when absent).
``initdb`` refuses to run as root, so as root the cluster is created and run as the
``postgres`` user in a temporary directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.emulator import stop_process

PG_USER = "reconcile"


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bindir() -> Path:
    """Find the PostgreSQL server binaries (initdb, pg_ctl), or fail the session."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        candidates.insert(0, out.stdout.strip())
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    pytest.fail(
        "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin "
        "or pg_config --bindir: install the postgresql package (.ci/run does)",
        pytrace=False,
    )


@dataclass
class Postgres:
    """A running throwaway cluster."""

    url: str
    port: int


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """Start a PostgreSQL cluster on a free loopback port for the whole session."""
    with running_postgres() as server:
        yield server


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """Run a throwaway PostgreSQL cluster on a free loopback port for the block."""
    bindir = postgres_bindir()
    root = Path(tempfile.mkdtemp(prefix="reconcile-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, sockets = root / "data", root / "sock"
    port = free_port()
    subprocess.run(
        _as_owner(["mkdir", "-p", str(sockets)]), check=True, capture_output=True, text=True
    )
    init = subprocess.run(
        _as_owner(
            [str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, "-A", "trust", "--no-sync"]
        ),
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode != 0:
        pytest.fail(f"initdb failed: {init.stderr or init.stdout}", pytrace=False)
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log")]
    start = subprocess.run(
        _as_owner([*pg_ctl, "-w", "-t", "60", "start"]),
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode != 0:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        pytest.fail(f"pg_ctl start failed: {start.stderr or start.stdout}\n{log}", pytrace=False)
    try:
        yield Postgres(url=f"postgresql://{PG_USER}@127.0.0.1:{port}/postgres", port=port)
    finally:
        subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class S3Server:
    """A running moto server and the variables that point boto3 at it."""

    url: str
    bucket: str

    def env(self) -> dict[str, str]:
        """The standard AWS variables for this server (fake credentials)."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """Start ``moto_server`` on a free loopback port with one bucket, for the whole session."""
    with running_s3() as server:
        yield server


@contextlib.contextmanager
def running_s3() -> Iterator[S3Server]:
    """Run ``moto_server`` on a free loopback port with one bucket for the block."""
    port = free_port()
    binary = Path(sys.executable).with_name("moto_server")
    log = tempfile.TemporaryFile()  # noqa: SIM115 - open for the server's life
    process = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/moto-api/", timeout=1)
            break
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                log.seek(0)
                pytest.fail(f"moto_server did not start: {log.read()!r}", pytrace=False)
            time.sleep(0.1)
    server = S3Server(url=url, bucket=f"state-{uuid.uuid4().hex[:8]}")
    import boto3

    boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=server.bucket)
    try:
        yield server
    finally:
        stop_process(process)
        log.close()
