"""The Docker provider of the sandbox seam: task containers on Docker engines (one or a pool)."""

from services.sandbox.docker.provider import DROPPED_CAPS, KEEPER, DockerSandboxProvider
from services.sandbox.docker.sandbox import DockerSandbox

__all__ = ["DROPPED_CAPS", "KEEPER", "DockerSandbox", "DockerSandboxProvider"]
