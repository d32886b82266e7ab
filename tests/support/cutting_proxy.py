"""A TCP proxy on 127.0.0.1 that can lose an answer: armed, it passes the next request that
starts with a given prefix on to the server and, when the server answers, closes the client's
connection instead of relaying the answer (what a client sees when a connection is cut, or a
load balancer times out, after the server did the work)."""

from __future__ import annotations

import asyncio
import contextlib


class CuttingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.cut_next: bytes | None = None
        """Arm with a request's first bytes (``b"POST /tasks "``): its answer is lost, once."""
        self.cut = 0
        """Answers lost so far."""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        losing = asyncio.Event()

        async def requests() -> None:
            while data := await client_r.read(65536):
                if self.cut_next is not None and data.startswith(self.cut_next):
                    self.cut_next = None
                    losing.set()
                server_w.write(data)
                await server_w.drain()

        async def answers() -> None:
            while data := await server_r.read(65536):
                if losing.is_set():  # the server did the work; the client never hears of it
                    self.cut += 1
                    return
                client_w.write(data)
                await client_w.drain()

        try:
            up = asyncio.create_task(requests())
            await answers()
            up.cancel()
        finally:
            for w in (client_w, server_w):
                w.close()
                with contextlib.suppress(ConnectionError):
                    await w.wait_closed()
