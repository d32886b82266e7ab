"""What talking to the Docker engine can raise, in one tuple for every ``except``.

docker-py wraps only some of the errors of the HTTP stack under it: a refused or reset
connection (the engine restarting, a proxy gone) surfaces as ``requests`` or ``urllib3``
errors, or as a bare ``ConnectionError`` from a hijacked socket. The sandbox turns all of them
into :class:`~services.green.sandbox.base.SandboxError` (an infrastructure failure).
"""

from __future__ import annotations

import docker.errors
import requests
import urllib3.exceptions

ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    ConnectionError,
)
