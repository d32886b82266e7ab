"""Sandbox providers by name: ``docker`` now, room for others (``kubernetes``) later.

A provider registers a factory under a name; green picks one with ``GREEN_SANDBOX_PROVIDER``
and passes it keyword options (the engines, the owner label, the registry mirror). Factories
are imported lazily, so a deployment pays only for the provider it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.sandbox.base import SandboxProvider

Factory = Callable[..., SandboxProvider]
_FACTORIES: dict[str, Factory] = {}


def register_provider(name: str) -> Callable[[Factory], Factory]:
    """Decorator: make ``factory(**options)`` the provider called ``name``."""

    def add(factory: Factory) -> Factory:
        _FACTORIES[name] = factory
        return factory

    return add


def provider_names() -> list[str]:
    return sorted(_FACTORIES)


def create_provider(name: str, **options: Any) -> SandboxProvider:
    """The provider called ``name``, built with ``options``. ValueError for an unknown name."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        known = ", ".join(provider_names())
        raise ValueError(f"unknown sandbox provider {name!r} (known: {known})") from None
    return factory(**options)


@register_provider("docker")
def _docker(**options: Any) -> SandboxProvider:
    """One Docker engine or a pool of them (``hosts``): see :mod:`services.sandbox.docker`."""
    from services.sandbox.docker.pool import docker_provider

    return docker_provider(**options)
