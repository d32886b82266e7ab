"""What an agent run records: its usage (:class:`RunStats`), its trajectory events (the prompts
it rendered, each model call, the end; each command is written by the run's
:class:`~services.purple.commands.CommandLog`) and the final :class:`RunResult`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.purple.agent.parser import FORMAT_HELP
from services.purple.llm.base import LLM, LLMError, LLMReply
from services.purple.protocols import CommandRecord, RunResult, TaskContext
from services.purple.signals import Terminating, ending
from services.purple.trajectory import Trajectory
from services.shared.logging import get_logger

if TYPE_CHECKING:
    from services.purple.agent.config import AgentConfig
    from services.purple.agent.context import Conversation

log = get_logger("services.purple.agent.loop")


class RunRecord:
    def __init__(
        self,
        task: TaskContext,
        *,
        policy: str,
        config: AgentConfig,
        llm: LLM,
        toolset: str,
        trajectory_dir: str | Path | None,
    ) -> None:
        self.task, self.policy, self.cfg, self.llm, self.toolset = (
            task,
            policy,
            config,
            llm,
            toolset,
        )
        self.stats = task.usage
        self.begin = time.monotonic()
        self.traj = Trajectory(trajectory_dir, task.task_id, policy)
        task.commands.trajectory = self.traj  # each command goes in through the run's log
        self.log = log.bind(task_id=task.task_id, policy=policy)
        self.prompts: dict[str, str] = {}

    def start(self, tools: str, step_limit: int | None) -> tuple[str, str]:
        """Render the prompts, record them with the config: (system prompt, first message)."""
        task = self.task
        variables = {
            "task": task.description,
            "paths": task.paths,
            "tools": tools,
            "mode": self.cfg.mode,
            "format_help": FORMAT_HELP,
            "step_limit": step_limit,
            "command_limit": task.max_commands,
        }
        self.prompts = {
            "system": self.cfg.render("system_template", **variables),
            "instance": self.cfg.render("instance_template", **variables),
        }
        self.traj.event(
            "start",
            config=self.cfg.model_dump(),
            model=_serialize(self.llm),
            toolset=self.toolset,
            task={
                "task_id": task.task_id,
                "paths": task.paths.model_dump(),
                "max_commands": task.max_commands,
                "deadline": task.deadline,
            },
            prompts=self.prompts,
        )
        return self.prompts["system"], self.prompts["instance"]

    def llm_call(self, reply: LLMReply) -> None:
        self.stats.tokens_in += reply.tokens_in
        self.stats.tokens_out += reply.tokens_out
        self.stats.cost += reply.cost
        self.traj.event(
            "llm_call",
            step=self.stats.steps,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            usage_reported=reply.usage_reported,
            cost=reply.cost,
            cost_source=reply.cost_source,
            duration_s=reply.duration_s,
            finish_reason=reply.finish_reason,
            **({"cached_tokens": reply.cached_tokens} if reply.cached_tokens is not None else {}),
            **({"reasoning": reply.reasoning} if reply.reasoning else {}),
            **({"retries": reply.retries} if reply.retries else {}),
        )

    def finish(
        self, ended: BaseException | None, history: list[CommandRecord], chat: Conversation
    ) -> RunResult:
        """The run's result (``ended``: what stopped it; None when cancelled), recorded."""
        if ended is None:
            status, reason, submission = "error", "cancelled", None
        else:
            if isinstance(ended, LLMError):  # expected: the model's server said no; one line
                self.log.warning("agent run failed: model error", error=str(ended)[:500])
            elif not isinstance(ended, Terminating):
                self.log.error("agent run failed", exc_info=ended)
            status, reason, submission = ending(ended)
        result = RunResult(
            task_id=self.task.task_id,
            policy=self.policy,
            status=status,  # type: ignore[arg-type]
            reason=reason,
            stats=self.stats,
            duration_s=time.monotonic() - self.begin,
            submission=submission,
            command_history=history,
            trajectory_path=str(self.traj.final_path) if self.traj.final_path else None,
        )
        self.traj.event("end", result=result.model_dump(exclude={"command_history"}))
        self.traj.finish(
            config=self.cfg.model_dump(),
            model=_serialize(self.llm),
            prompts=self.prompts,
            result=result.model_dump(),
            messages=chat.messages,
            compactions=chat.compactor.compactions,
        )
        self.log.info(
            "agent run finished",
            status=status,
            reason=reason,
            steps=self.stats.steps,
            cost=round(self.stats.cost, 4),
        )
        return result


def _serialize(llm: LLM) -> dict[str, Any]:
    fn = getattr(llm, "serialize", None)
    return fn() if callable(fn) else {"class": type(llm).__name__, "name": getattr(llm, "name", "")}
