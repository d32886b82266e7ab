"""Per-task isolated containers behind an async seam: see base.py (the protocols and errors),
registry.py (providers by name), framing.py (the shell session) and docker/ (the engine)."""

from services.sandbox.base import (
    AgentFault,
    EngineUnreachable,
    ImageNotFound,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
    SandboxTimeout,
    UnreadableFile,
)
from services.sandbox.registry import create_provider, provider_names, register_provider

__all__ = [
    "AgentFault",
    "EngineUnreachable",
    "ImageNotFound",
    "Sandbox",
    "SandboxError",
    "SandboxProvider",
    "SandboxSpec",
    "SandboxTimeout",
    "UnreadableFile",
    "create_provider",
    "provider_names",
    "register_provider",
]
