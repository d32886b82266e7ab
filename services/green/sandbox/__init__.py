"""Per-task isolated containers. See base.py for the seam and docker.py for the engine."""

from services.green.sandbox.base import (
    ImageNotFound,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
)

__all__ = ["ImageNotFound", "Sandbox", "SandboxError", "SandboxProvider", "SandboxSpec"]
