"""Green's server answers a request it refuses mid-body, and the client reads that answer whole
(services/green/edge/server.py, "lingering close"): real HTTP on 127.0.0.1, green's own protocol.

Closed at once, a socket that still has unread data is reset by the kernel, which drops what was
not yet sent of the answer and makes the client's next read fail: a client pushing a too-big
body then missed the sentence that says why (seen under load as a 413 with its headers and no
body).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from services.green.config import GreenSettings
from services.green.edge import server as green_server
from tests.support.servers import free_port

MIB = 2**20
SENTENCE = b"the request body is larger than this route's limit"


async def refuse_at_once(scope, receive, send) -> None:
    """Like green's request bounds: a declared length over the limit is refused unread."""
    if scope["type"] != "http":
        return
    body = json.dumps({"detail": SENTENCE.decode()}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    port = free_port()
    settings = GreenSettings(host="127.0.0.1", port=port)
    server = uvicorn.Server(green_server.server_config(refuse_at_once, settings, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(30)


def _read_all(s: socket.socket) -> tuple[bytes, str]:
    """Everything the server sends, and how the connection ended: 'eof' or 'reset'."""
    got = b""
    while True:
        try:
            data = s.recv(65536)
        except ConnectionResetError:
            return got, "reset"
        if not data:
            return got, "eof"
        got += data


TCP_ESTABLISHED = 1
"""Linux's ``tcpi_state`` (the first byte of ``TCP_INFO``) of a connection neither side has
closed; CLOSE_WAIT once the peer's FIN arrived."""


def test_a_client_still_sending_reads_the_whole_refusal_then_end_of_file(port: int) -> None:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (400 * MIB))
    chunk = b"[" * MIB
    answered = select.poll()
    answered.register(s, select.POLLIN)
    sent = 0
    while not answered.poll(0) and sent < 64 * MIB:  # until the answer starts to arrive
        s.sendall(chunk)
        sent += len(chunk)
    assert answered.poll(10_000), "no answer"
    deadline = time.monotonic() + 30  # until green has closed (or half-closed) its side
    while s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == TCP_ESTABLISHED:
        assert time.monotonic() < deadline, "green never closed its side"
        time.sleep(0.01)
    s.sendall(chunk)  # the client has not seen the answer yet: it goes on sending
    answer, ending = _read_all(s)
    s.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert SENTENCE in answer, answer
    assert ending == "eof", f"the connection was {ending} after {len(answer)} bytes"


def test_what_lingers_is_bounded(port: int) -> None:
    """A client that never stops sending is closed after LINGER_BYTES (or LINGER_S)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (4096 * MIB))
    chunk, sent = b"[" * MIB, 0
    with pytest.raises(OSError):  # reset or broken pipe: green stopped reading
        while sent < 1024 * MIB:
            s.sendall(chunk)
            sent += len(chunk)
    s.close()
    assert sent < 1024 * MIB
