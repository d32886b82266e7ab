"""Build the ``docker`` provider from settings: one engine (the local one by default)."""

from __future__ import annotations

from typing import Any

from services.sandbox.docker.provider import DockerSandboxProvider


def docker_provider(
    *, owner: str | None = None, label_prefix: str = "arena", registry: str | None = None
) -> Any:
    """The ``docker`` provider: the engine ``DOCKER_HOST`` names (the local socket by default)."""
    return DockerSandboxProvider(label_prefix=label_prefix, owner=owner, registry=registry)
