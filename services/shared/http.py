"""The TLS context every HTTP client of a process shares.

httpx builds a new TLS context for every client it creates, even for a client that only ever
speaks plain HTTP to 127.0.0.1, and building one parses certifi's bundle of root certificates:
42 ms of CPU on the project's machine, against 0.13 ms for a client given a context built once.
Green makes clients per task (its A2A peer for the task's purple, the fetch of purple's card for
the run's provenance) and per dashboard view of purple; purple makes one per task; every test
that polls a service makes one per request. So every client here is given :func:`tls_context`:
the context httpx would have built (the same ``SSL_CERT_FILE``/``SSL_CERT_DIR`` rules), built once.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context(trust_env: bool = True) -> ssl.SSLContext:
    """httpx's default context for ``verify=True``, built once per process (``trust_env``: as
    the client's own flag, whether ``SSL_CERT_FILE``/``SSL_CERT_DIR`` may name the roots)."""
    return httpx.create_ssl_context(trust_env=trust_env)
