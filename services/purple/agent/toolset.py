"""What the loop needs from a kind of task: its tools, and the task-specific prompt text.

The ReAct loop is the same for root-cause analysis and for fixing issues (SWE-bench mode); a
:class:`Toolset` is the part that differs. It makes one fresh :class:`Tools` per run (the tool
functions plus the run's command history), writes the system prompt around the tool list, and
wraps the task text into the first user message. :class:`RcaToolset` is the default;
``services.purple.swebench.toolset.SweToolset`` is the other one; :class:`CommandToolset` is
what they share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from services.purple.agent import prompts
from services.purple.environment import CommandRecord, RunStats, TaskEnvironment
from services.purple.tools.base import CommandHook, CommandTools
from services.purple.tools.rca import RcaTools
from services.purple.tools.registry import ToolRegistry
from services.shared.protocol import TaskPaths


@runtime_checkable
class Tools(Protocol):
    """The tools of one run, as the loop drives them."""

    history: list[CommandRecord]
    """Every command run so far (never compacted away)."""
    step: int
    """Set by the loop before each step; recorded with every command."""
    command_timeout: float | None
    """Set by the loop before each call (lowered as the deadline nears)."""
    budget_refusals: int
    """Calls refused because the command budget is used up (two end the run)."""

    def registry(self) -> ToolRegistry: ...


@runtime_checkable
class Toolset(Protocol):
    """A kind of task for the ReAct loop: its tools and prompts."""

    name: str
    reserved_commands: int
    """Commands of the command budget kept for the final answer (RCA: writing loc.json)."""
    finish_hint: str
    """How to end the task, for reminders ("submit your answer with submit_localization")."""

    def make_tools(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        on_command: CommandHook | None,
        stats: Callable[[], RunStats] | None,
        max_commands: int | None,
    ) -> Tools: ...

    def system_prompt(
        self,
        paths: TaskPaths,
        tools: str,
        *,
        mode: str,
        step_limit: int | None,
        command_limit: int | None,
        base: str | None,
    ) -> str:
        """``tools`` is the registry's description; ``base`` a custom prompt (config)."""
        ...

    def task_message(self, description: str) -> str: ...

    def compaction_notes(self, tools: Tools) -> list[str]:
        """Facts a context summary must keep (e.g. refused submissions)."""
        ...


ToolsT = TypeVar("ToolsT", bound=CommandTools)


class CommandToolset(Generic[ToolsT]):
    """What the toolsets share: fresh :attr:`tools_class` tools per run (with
    :meth:`tool_options`), and the system prompt from :meth:`prompt` (the limits passed on)."""

    name: str
    reserved_commands = 1
    finish_hint: str
    tools_class: type[ToolsT]

    def tool_options(self) -> dict[str, Any]:
        """Keyword arguments for :attr:`tools_class` besides the run's (e.g. output limits)."""
        return {}

    def make_tools(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        on_command: CommandHook | None = None,
        stats: Callable[[], RunStats] | None = None,
        max_commands: int | None = None,
    ) -> ToolsT:
        return self.tools_class(
            env,
            paths,
            on_command=on_command,
            stats=stats,
            max_commands=max_commands,
            **self.tool_options(),
        )

    def system_prompt(
        self,
        paths: TaskPaths,
        tools: str,
        *,
        mode: str,
        step_limit: int | None,
        command_limit: int | None = None,
        base: str | None = None,
    ) -> str:
        return self.prompt(
            paths, tools, mode=mode, step_limit=step_limit, command_limit=command_limit, base=base
        )

    def prompt(self, paths: TaskPaths, tools: str, **limits: Any) -> str:
        """The system prompt (``limits``: those of :meth:`system_prompt`)."""
        raise NotImplementedError


class RcaToolset(CommandToolset[RcaTools]):
    """Root-cause analysis of a crash (the default): :class:`RcaTools` and the RCA prompt."""

    name = "rca"
    finish_hint = "submit your answer with submit_localization"
    tools_class = RcaTools

    def prompt(self, paths: TaskPaths, tools: str, **limits: Any) -> str:
        return prompts.system_prompt(paths, tools, **limits)

    def task_message(self, description: str) -> str:
        return prompts.task_message(description)

    def compaction_notes(self, tools: Tools) -> list[str]:
        submissions = getattr(tools, "submissions", [])
        return [
            f"A submission was refused: {'; '.join(r.errors)}"
            for _, r in submissions
            if not r.accepted
        ]
