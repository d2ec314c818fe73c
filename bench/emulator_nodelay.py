"""Start the emulator with TCP_NODELAY on its connections (the benchmarks' launcher).

The emulator's ``bind`` creates its listening socket as ``socket(family, SOCK_STREAM)``, whose
protocol number is 0; asyncio sets TCP_NODELAY on accepted sockets only when the protocol is
IPPROTO_TCP, so the emulator's responses (headers and body written separately) meet Nagle's
algorithm and the client's delayed ACK: every request on a kept-alive connection waits about
40 ms. Real servers do not. This launcher replaces ``bind`` with the same code plus the
explicit protocol, so that benchmarks measure the client rather than that stall; the emulator
itself is left as it is (the fix belongs to its maintainers). Arguments are those of
``reconcile emulator``.
"""

from __future__ import annotations

import socket
import sys

from reconciler.emulator import server


def bind(host: str, port: int) -> socket.socket:
    """Return the emulator's listening socket, created as an explicit TCP socket."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def main() -> None:
    """Run ``reconcile emulator ARGS`` with the patched ``bind``."""
    server.bind = bind
    from reconciler.cli import main as cli

    sys.argv = ["reconcile", "emulator", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
