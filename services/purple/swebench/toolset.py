"""The SWE-bench kind of task for the ReAct loop: :class:`~services.purple.tools.swe.SweTools`
and the issue-fixing prompts (plug it in with ``ReactAgent(..., toolset=SweToolset())``)."""

from __future__ import annotations

from collections.abc import Callable

from services.green.swebench.instances import WORKDIR
from services.purple.agent.toolset import Tools
from services.purple.environment import RunStats, TaskEnvironment
from services.purple.swebench import prompts
from services.purple.tools.swe import CommandHook, SweTools
from services.shared.protocol import TaskPaths


def swe_paths(workdir: str = WORKDIR) -> TaskPaths:
    """Task paths for a SWE-bench container: everything is the repository."""
    return TaskPaths(workspace=workdir, source_dir=workdir, error_report="", submission="")


class SweToolset:
    name = "swe"
    reserved_commands = 1
    finish_hint = "call finish (your changes so far are the patch)"

    def __init__(self, *, show_file_max_lines: int = 200, search_max_matches: int = 80) -> None:
        self.show_file_max_lines = show_file_max_lines
        self.search_max_matches = search_max_matches

    def make_tools(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        on_command: CommandHook | None = None,
        stats: Callable[[], RunStats] | None = None,
        max_commands: int | None = None,
    ) -> SweTools:
        return SweTools(
            env,
            paths,
            on_command=on_command,
            stats=stats,
            max_commands=max_commands,
            show_file_max_lines=self.show_file_max_lines,
            search_max_matches=self.search_max_matches,
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
        return prompts.system_prompt(
            tools,
            mode=mode,
            step_limit=step_limit,
            command_limit=command_limit,
            base=base,
            workdir=paths.workspace,
        )

    def task_message(self, description: str) -> str:
        return prompts.task_message(description)

    def compaction_notes(self, tools: Tools) -> list[str]:
        return ["Your changes so far are in the repository: run `git diff` to see them."]
