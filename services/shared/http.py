"""The HTTP clients of green, purple and the ``arena`` client, all on one TLS context a process.

httpx builds a new TLS context for every client it creates, even for a client that only ever
speaks plain HTTP to 127.0.0.1, and building one parses certifi's bundle of root certificates:
42 ms of CPU on the project's machine, against 0.13 ms for a client given a context built once.
Green makes clients per task (its A2A peer for the task's purple, the fetch of purple's card for
the run's provenance) and per dashboard view of purple; purple makes one per task, and one more
inside the OpenAI SDK's client for a policy with a model. So every client is made here
(:func:`client`, :func:`async_client`) or given :func:`shared_tls` (a client another library
builds); ``scripts/check_layout.py`` keeps ``httpx.Client``/``httpx.AsyncClient`` and the one-shot
calls out of the rest of ``services/``.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx


def tls_context(trust_env: bool = True) -> ssl.SSLContext:
    """httpx's default context for ``verify=True``, built once per process (``trust_env``: as
    the client's own flag, whether ``SSL_CERT_FILE``/``SSL_CERT_DIR`` may name the roots)."""
    return _context(bool(trust_env))  # one cache key per flag, however it is passed


@functools.cache
def _context(trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


def shared_tls(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` of an httpx client (or one-shot call) with ``verify`` set to the shared
    context that matches its ``trust_env``, unless they name a ``verify`` of their own."""
    kwargs.setdefault("verify", tls_context(kwargs.get("trust_env", True)))
    return kwargs


def client(**kwargs: Any) -> httpx.Client:
    """``httpx.Client(**kwargs)`` on the shared TLS context."""
    return httpx.Client(**shared_tls(kwargs))


def async_client(**kwargs: Any) -> httpx.AsyncClient:
    """``httpx.AsyncClient(**kwargs)`` on the shared TLS context."""
    return httpx.AsyncClient(**shared_tls(kwargs))


class BodyTooLarge(Exception):
    """An answer longer than the reader's bound: it was not read to its end."""


async def read_capped(
    client: httpx.AsyncClient, url: str, max_bytes: int
) -> tuple[int, str, bytes]:
    """``GET url``: its status, content type and body, reading no more than ``max_bytes`` of
    it (an untrusted server's answer: :class:`BodyTooLarge` beyond). The caller bounds the time
    (``asyncio.timeout``): a timeout between chunks does not bound a trickle."""
    async with client.stream("GET", url) as resp:
        body, size = [], 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise BodyTooLarge(f"{url} answered more than {max_bytes:,} bytes")
            body.append(chunk)
        return resp.status_code, resp.headers.get("content-type", ""), b"".join(body)
