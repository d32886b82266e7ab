"""Build the policy purple runs from plain settings (the A2A service's config maps onto this).

No model configured -> the stack-trace analyst (offline, deterministic). A model -> the ReAct
agent on an OpenAI-compatible endpoint; optionally the analyst submits when the agent ends
without an accepted submission (off by default: it mixes the baseline into the agent's score).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.agent.toolset import Toolset
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.environment import Policy, RunResult, TaskContext
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig


class FallbackPolicy:
    """Run ``primary``; if it ends without an accepted submission, run ``fallback``.
    The result is the fallback's, with the primary's usage and commands added."""

    def __init__(self, primary: Policy, fallback: Policy) -> None:
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}+{fallback.name}"

    async def run(self, task: TaskContext) -> RunResult:
        first = await self.primary.run(task)
        if first.status == "submitted":
            return first
        second = await self.fallback.run(task)
        stats = first.stats.model_copy()
        stats.steps += second.stats.steps
        stats.commands += second.stats.commands
        return second.model_copy(
            update={
                "policy": self.name,
                "reason": f"{self.primary.name}: {first.status} ({first.reason}); "
                f"{self.fallback.name}: {second.reason}",
                "stats": stats,
                "duration_s": first.duration_s + second.duration_s,
                "command_history": first.command_history + second.command_history,
                "trajectory_path": first.trajectory_path,
            }
        )


def build_policy(
    *,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    mode: Literal["tool_calls", "text"] | None = None,
    agent: AgentConfig | dict[str, Any] | None = None,
    llm: dict[str, Any] | None = None,
    trajectory_dir: str | Path | None = None,
    fallback_to_analyst: bool = False,
    toolset: Toolset | None = None,
) -> Policy:
    """``agent``: AgentConfig fields (limits, budget...); ``llm``: extra
    :class:`OpenAIModelConfig` fields (timeout_s, max_retries, temperature, prices...);
    ``toolset``: the kind of task (default: root-cause analysis)."""
    analyst = StackTraceAnalyst(trajectory_dir=trajectory_dir)
    if not model:
        return analyst
    config = agent if isinstance(agent, AgentConfig) else AgentConfig.model_validate(agent or {})
    if mode is not None:
        config = config.model_copy(update={"mode": mode})
    chat = OpenAIChatModel(
        OpenAIModelConfig.model_validate(
            {"model": model, "base_url": base_url, "api_key": api_key, **(llm or {})}
        )
    )
    react = ReactAgent(chat, config, trajectory_dir=trajectory_dir, toolset=toolset)
    return FallbackPolicy(react, analyst) if fallback_to_analyst else react
