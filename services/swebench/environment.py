"""Run the agent's commands in a SWE-bench container: a :class:`TaskEnvironment` over a
:class:`~services.sandbox.base.Sandbox`, with the image's Python environment activated
(the prefix of :mod:`services.swebench.activation`)."""

from __future__ import annotations

from services.purple.protocols import RunStats
from services.purple.signals import TaskEnded
from services.sandbox.base import AgentFault, Sandbox, SandboxError
from services.shared.commands import CommandResult
from services.shared.protocol import SubmitResult
from services.swebench.activation import with_activate


class SandboxEnvironment:
    """The agent's :class:`~services.purple.protocols.TaskEnvironment` in a SWE-bench
    container. ``submit`` always accepts: the patch is taken from the repository afterwards."""

    def __init__(
        self, sandbox: Sandbox, *, activate: str = "", default_timeout: float = 300.0
    ) -> None:
        self.sandbox = sandbox
        self.activate = activate
        self.default_timeout = default_timeout

    async def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        try:
            return await self.sandbox.exec(
                with_activate(command, self.activate), timeout or self.default_timeout
            )
        except (SandboxError, AgentFault) as exc:  # AgentFault: the command ended its container
            raise TaskEnded(f"the container is gone: {exc}") from exc

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        return SubmitResult(accepted=True)
