"""What talking to a Docker engine can raise, and how it maps onto the seam's errors.

docker-py wraps only some of the errors of the HTTP stack under it: a refused or reset
connection (the engine restarting, a proxy gone) surfaces as ``requests`` or ``urllib3``
errors, or as a bare ``ConnectionError`` from a hijacked socket. :func:`engine_error` turns
each into the seam's exception: :class:`~services.sandbox.base.EngineUnreachable` (a
``ConnectionError``) when the engine did not answer, :class:`~services.sandbox.base.SandboxError`
when it answered with an error of its own.
"""

from __future__ import annotations

import docker.errors
import requests
import urllib3.exceptions

from services.sandbox.base import EngineUnreachable, SandboxError

ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    ConnectionError,
    TimeoutError,
)
"""Every exception a docker-py call may raise for an engine failure (one tuple for ``except``)."""

_UNREACHABLE: tuple[type[BaseException], ...] = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.NewConnectionError,
    ConnectionError,
    TimeoutError,
)


def engine_error(exc: BaseException, what: str) -> SandboxError:
    """The seam's exception for an engine failure while doing ``what``."""
    if isinstance(exc, SandboxError):
        return exc
    detail = getattr(exc, "explanation", None) or exc
    if isinstance(exc, _UNREACHABLE) or (
        isinstance(exc, docker.errors.DockerException)
        and not isinstance(exc, docker.errors.APIError)
        and "connection" in str(exc).lower()
    ):
        return EngineUnreachable(f"{what}: the engine does not answer: {detail}")
    return SandboxError(f"{what}: {detail}")
