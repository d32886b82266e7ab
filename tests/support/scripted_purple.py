"""A scripted purple for green's tests: the real purple service with a fixed-script policy.

It runs a list of shell commands through green, writes the given loc.json(s) and submits; a
refused submission moves on to the next loc.json in the list. What it saw is kept for asserts.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from services.purple.protocols import RunResult, RunStats, TaskContext
from services.purple.signals import TaskEnded
from services.shared.commands import CommandResult
from services.shared.protocol import SubmitResult


def write_file_command(path: str, content: str) -> str:
    return f"cat > {path} <<'__ARENA_EOF__'\n{content}\n__ARENA_EOF__"


@dataclass
class Script:
    commands: list[str] = field(
        default_factory=lambda: ["ls /workspace", "head -5 /workspace/error.txt"]
    )
    """Shell commands; ``{task_id}`` is replaced by the task's id."""
    submissions: list[dict[str, Any] | str] = field(default_factory=list)
    """loc.json contents to try in turn (a str is written verbatim: use it for malformed JSON)."""
    pause_s: float = 0.0
    """Sleep between commands (lets tests act mid-task)."""
    submit: bool = True
    per_call: list[list[dict[str, Any] | str]] = field(default_factory=list)
    """When given, the n-th task this purple gets (in arrival order) tries ``per_call[n %
    len(per_call)]`` instead of ``submissions`` (a purple that hits a known share)."""
    hold: threading.Event | None = None
    """When given, each task waits for it after its commands (a test keeps tasks running until
    it says)."""


@dataclass
class Observed:
    results: list[CommandResult] = field(default_factory=list)
    submit_replies: list[SubmitResult] = field(default_factory=list)
    ended: str | None = None
    endings: list[str] = field(default_factory=list)
    """Every refusal that ended a task (``ended`` is the last)."""
    task_ids: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)


class ScriptedPolicy:
    name = "scripted"

    def __init__(self, script: Script, observed: Observed) -> None:
        self.script, self.observed = script, observed

    def _submissions(self) -> list[dict[str, Any] | str]:
        plan = self.script.per_call
        return (
            plan[(len(self.observed.task_ids) - 1) % len(plan)] if plan else self.script.submissions
        )

    async def run(self, task: TaskContext) -> RunResult:
        self.observed.task_ids.append(task.task_id)
        self.observed.descriptions.append(task.description)
        stats = RunStats()
        status, reason = "limits", "script ended without an accepted submission"
        try:
            for cmd in self.script.commands:
                cmd = cmd.replace("{task_id}", task.task_id)
                self.observed.results.append(await task.env.execute(cmd))
                stats.commands += 1
                stats.steps += 1
                if self.script.pause_s:
                    await asyncio.sleep(self.script.pause_s)
            while self.script.hold is not None and not self.script.hold.is_set():
                await asyncio.sleep(0.05)
            for sub in self._submissions():
                text = sub if isinstance(sub, str) else json.dumps(sub)
                await task.env.execute(write_file_command(task.paths.submission, text))
                if not self.script.submit:
                    break
                reply = await task.env.submit(stats)
                self.observed.submit_replies.append(reply)
                if reply.accepted:
                    status, reason = "submitted", "accepted"
                    break
        except TaskEnded as exc:
            self.observed.ended = str(exc)
            self.observed.endings.append(str(exc))
            status, reason = "limits", str(exc)
        return RunResult(
            task_id=task.task_id, policy=self.name, status=status, reason=reason, stats=stats
        )
