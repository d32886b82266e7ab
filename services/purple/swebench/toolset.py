"""The SWE-bench kind of task for the ReAct loop: :class:`~services.purple.tools.swe.SweTools`
and the issue-fixing prompts (plug it in with ``ReactAgent(..., toolset=SweToolset())``)."""

from __future__ import annotations

from typing import Any

from services.purple.agent.toolset import CommandToolset, Tools
from services.purple.swebench import prompts
from services.purple.tools.swe import SweTools
from services.shared.protocol import TaskPaths


class SweToolset(CommandToolset[SweTools]):
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

    def prompt(self, paths: TaskPaths, tools: str, **limits: Any) -> str:
        return prompts.system_prompt(tools, workdir=paths.workspace, **limits)

    def task_message(self, description: str) -> str:
        return prompts.task_message(description)

    def compaction_notes(self, tools: Tools) -> list[str]:
        return ["Your changes so far are in the repository: run `git diff` to see them."]
