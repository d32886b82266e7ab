"""The kinds of task the ReAct loop works on (each a :class:`~services.purple.protocols.Toolset`):
root-cause analysis (:class:`RcaToolset`, the default), fixing an issue (:class:`SweToolset`),
and reproducing (:class:`PocToolset`) or fixing (:class:`FixToolset`) a vulnerability.

A toolset makes one fresh set of tools per run (the tool functions plus the run's command
history) and says what a context summary must keep. Its prompts are not here: they are the
agent config's templates (``services/purple/agent/prompts/<name>.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from services.purple.commands import CommandLog
from services.purple.protocols import RunStats, TaskEnvironment, Tools
from services.purple.tools.base import CommandTools
from services.purple.tools.rca import RcaTools
from services.purple.tools.swe import SweTools
from services.purple.tools.vuln import FixTools, PocTools
from services.shared.protocol import TaskPaths

ToolsT = TypeVar("ToolsT", bound=CommandTools)


class CommandToolset(Generic[ToolsT]):
    """What the toolsets share: fresh :attr:`tools_class` tools per run, with
    :meth:`tool_options`."""

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
        commands: CommandLog | None = None,
        stats: Callable[[], RunStats] | None = None,
        max_commands: int | None = None,
        offers: tuple[str, ...] = (),
    ) -> ToolsT:
        return self.tools_class(
            env,
            paths,
            commands=commands,
            stats=stats,
            max_commands=max_commands,
            offers=offers,
            **self.tool_options(),
        )


class RcaToolset(CommandToolset[RcaTools]):
    """Root-cause analysis of a crash (the default): :class:`RcaTools`."""

    name = "rca"
    finish_hint = "submit your answer with submit_localization"
    tools_class = RcaTools

    def compaction_notes(self, tools: Tools) -> list[str]:
        submissions = getattr(tools, "submissions", [])
        return [
            f"A submission was refused: {'; '.join(r.errors)}"
            for _, r in submissions
            if not r.accepted
        ]


class SweToolset(CommandToolset[SweTools]):
    """Fixing a GitHub issue (SWE-bench): :class:`SweTools`; the changes are the answer."""

    name = "swe"
    finish_hint = "call finish (your changes so far are the patch)"
    tools_class = SweTools

    def __init__(self, *, show_file_max_lines: int = 200, search_max_matches: int = 80) -> None:
        self.show_file_max_lines = show_file_max_lines
        self.search_max_matches = search_max_matches

    def tool_options(self) -> dict[str, Any]:
        return {
            "show_file_max_lines": self.show_file_max_lines,
            "search_max_matches": self.search_max_matches,
        }

    def compaction_notes(self, tools: Tools) -> list[str]:
        return ["Your changes so far are in the repository: run `git diff` to see them."]


class PocToolset(CommandToolset[PocTools]):
    """Reproducing a vulnerability: :class:`PocTools`; the input file is the answer."""

    name = "poc"
    finish_hint = "write your input with write_input and call submit_input"
    tools_class = PocTools

    def compaction_notes(self, tools: Tools) -> list[str]:
        return [f"Your input file so far is {tools.paths.submission}."]  # type: ignore[attr-defined]


class FixToolset(SweToolset):
    """Fixing a vulnerability in C/C++ code: :class:`FixTools`; the changes are the answer."""

    name = "fix"
    tools_class = FixTools  # type: ignore[assignment]


TOOLSETS: dict[str, type[CommandToolset]] = {  # type: ignore[type-arg]
    "rca_task": RcaToolset,
    "swe_task": SweToolset,
    "poc_task": PocToolset,
    "fix_task": FixToolset,
}
"""The toolset of each kind of assignment green sends."""
