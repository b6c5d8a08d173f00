"""Black-holed remotes on loopback: TCP listeners whose accept queue is full and never drained, so a new connection's
SYN goes unanswered and the client waits out its own connect deadline, as with a host that drops packets."""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def black_holes(count: int) -> Iterator[list[str]]:
    """`count` MCP URLs on loopback that never accept a connection."""
    sockets: list[socket.socket] = []
    urls = []
    try:
        for _ in range(count):
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(0)  # Linux queues backlog + 1 connections, then drops SYNs
            sockets.append(listener)
            port = listener.getsockname()[1]
            for _ in range(2):
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                sockets.append(filler)
            urls.append(f"http://127.0.0.1:{port}/mcp")
        time.sleep(0.2)  # the fillers' handshakes complete and fill each queue
        yield urls
    finally:
        for sock in sockets:
            sock.close()
