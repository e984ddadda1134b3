"""A harness socket's receive buffer, raised so that a burst from the peer
waits in the kernel instead of being dropped there: the Python side of
suts/sockbuf.rs, for the CFDP harnesses (suts/cfdp/common/harnesskit.py)
and our model-driven tester (conformance/tester/core.py).

A datagram dropped at a full socket is one the capture shows arriving, so
the run is then an ``error`` (conformance/runner.py ``socket_overflowed``);
the buffer is made large enough for any burst a scenario sends.

Standard library only: the LibreCube harness imports it, through
harnesskit, in a venv that holds nothing but LibreCube's cfdp.
"""

from __future__ import annotations

import contextlib
import socket

# 16 MiB: room for over 10,000 datagrams of 1,500 octets (as RCVBUF in
# sockbuf.rs)
RCVBUF = 16 << 20
# Linux's SO_RCVBUFFORCE, which Python does not name.
SO_RCVBUFFORCE = 33


def raise_receive_buffer(sock: socket.socket) -> None:
    """Raise ``sock``'s receive buffer to RCVBUF: past net.core.rmem_max
    where the process may (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which a
    run's namespaces give it), else as far as rmem_max lets it."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
    except OSError:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
