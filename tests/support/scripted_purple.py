"""A scripted purple for green's tests: the real purple service with a fixed-script policy.

It runs a list of shell commands through green, writes the given loc.json(s) (or input files)
and submits; a refused submission moves on to the next one in the list. What it saw is kept for
asserts. A script may also choose a script per task by what a command prints in the task's
container (``by_key``: the project's name, since green never names the bug).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from services.purple.protocols import RunResult, RunStats, TaskContext
from services.purple.signals import TaskEnded
from services.shared.commands import CommandResult
from services.shared.protocol import SubmitResult


def write_file_command(path: str, content: str) -> str:
    return f"cat > {path} <<'__ARENA_EOF__'\n{content}\n__ARENA_EOF__"


def write_bytes_command(path: str, data: bytes) -> str:
    """Write any bytes (an input file, a patch) through base64."""
    return f"printf %s {base64.b64encode(data).decode()} | base64 -d > {path}"


def apply_patch_commands(patch: str | bytes, path: str = "/tmp/agent.diff") -> list[str]:
    """The commands an agent applies ``patch`` to its tree with (written to ``path``, then
    ``git apply``)."""
    data = patch.encode() if isinstance(patch, str) else patch
    return [write_bytes_command(path, data), f"git apply {path}"]


@dataclass
class Script:
    commands: list[str] = field(
        default_factory=lambda: ["ls /workspace", "head -5 /workspace/error.txt"]
    )
    """Shell commands; ``{task_id}`` is replaced by the task's id; :data:`RUN_POC` asks green
    to run the task's PoC instead (a refusal is kept in ``Observed.refusals``, and the script
    goes on)."""
    submissions: list[dict[str, Any] | str | bytes | None] = field(default_factory=list)
    """Submissions to try in turn, written to the task's submission path: a loc.json (a str is
    written verbatim: use it for malformed JSON), bytes (an input file), or None (submit what
    the commands left, e.g. a fix task's edited tree)."""
    pause_s: float = 0.0
    """Sleep between commands (lets tests act mid-task)."""
    submit: bool = True
    per_call: list[list[dict[str, Any] | str]] = field(default_factory=list)
    """When given, the n-th task this purple gets (in arrival order) tries ``per_call[n %
    len(per_call)]`` instead of ``submissions`` (a purple that hits a known share)."""
    by_key: dict[str, list[Script]] = field(default_factory=dict)
    """When given, the task runs ``key_command`` first and then the next script of the list
    its output names (stripped), in the order tasks with that key arrive."""
    key_command: str = "ls /workspace/src-vul"
    hold: threading.Event | None = None
    """When given, each task waits for it after its commands (a test keeps tasks running until
    it says)."""


RUN_POC = "{run_poc}"


@dataclass
class Observed:
    results: list[CommandResult] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    """What green answered a refused ``run_poc``."""
    submit_replies: list[SubmitResult] = field(default_factory=list)
    ended: str | None = None
    endings: list[str] = field(default_factory=list)
    """Every refusal that ended a task (``ended`` is the last)."""
    task_ids: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    """Each task's token, as green gave it (a test drives the task over MCP with it)."""
    descriptions: list[str] = field(default_factory=list)
    keys: Counter[str] = field(default_factory=Counter)
    """How many tasks of each ``by_key`` key arrived."""


class ScriptedPolicy:
    name = "scripted"

    def __init__(self, script: Script, observed: Observed) -> None:
        self.script, self.observed = script, observed

    def _submissions(self, script: Script) -> list[dict[str, Any] | str | bytes | None]:
        plan = script.per_call
        return (
            plan[(len(self.observed.task_ids) - 1) % len(plan)]  # type: ignore[return-value]
            if plan
            else script.submissions
        )

    async def run(self, task: TaskContext) -> RunResult:
        self.observed.task_ids.append(task.task_id)
        self.observed.tokens.append(getattr(task.env, "token", None) or "")
        self.observed.descriptions.append(task.description)
        script = self.script
        if script.by_key:
            key = (await task.env.execute(script.key_command)).output.strip()
            self.observed.keys[key] += 1
            script = script.by_key[key][self.observed.keys[key] - 1]
        return await self._run(task, script)

    async def _run(self, task: TaskContext, script: Script) -> RunResult:
        stats = RunStats()
        status, reason = "limits", "script ended without an accepted submission"
        try:
            for cmd in script.commands:
                cmd = cmd.replace("{task_id}", task.task_id)
                if cmd == RUN_POC:
                    try:
                        self.observed.results.append(await task.env.run_poc())  # type: ignore[attr-defined]
                    except TaskEnded as exc:
                        self.observed.refusals.append(str(exc))
                    continue
                self.observed.results.append(await task.env.execute(cmd))
                stats.commands += 1
                stats.steps += 1
                if script.pause_s:
                    await asyncio.sleep(script.pause_s)
            hold = script.hold or self.script.hold
            while hold is not None and not hold.is_set():
                await asyncio.sleep(0.05)
            for sub in self._submissions(script):
                if isinstance(sub, bytes):
                    await task.env.execute(write_bytes_command(task.paths.submission, sub))
                elif sub is not None:
                    text = sub if isinstance(sub, str) else json.dumps(sub)
                    await task.env.execute(write_file_command(task.paths.submission, text))
                if not script.submit:
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
