"""Green's listening socket (services/green/edge/server.py ``bind``) gives every connection
``TCP_NODELAY``: with Nagle's algorithm on, an answer written in two parts (headers, then body)
waited for the client's delayed ACK on a kept-alive connection, about 40 ms per answer.

Before: the socket was made without naming its protocol, and asyncio sets ``TCP_NODELAY`` only
on the connections of a socket whose protocol is TCP (``sock.proto``)."""

from __future__ import annotations

import asyncio
import socket

from services.green.config import GreenSettings
from services.green.edge import server as green_server
from tests.support.servers import free_port


async def test_the_connections_green_accepts_send_without_waiting_for_acks() -> None:
    port = free_port()
    sock = green_server.bind(GreenSettings(host="127.0.0.1", port=port))
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Record(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            seen.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Record, sock=sock)  # as uvicorn does
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(seen, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
