"""Which policy purple runs, from its settings: the ReAct agent with an LLM, or the analyst."""

from __future__ import annotations

from collections.abc import Callable

from services.purple.agent.factory import build_policy
from services.purple.config import PurpleSettings
from services.purple.environment import Policy, RunResult, TaskContext
from services.purple.swebench.toolset import SweToolset


class NoPolicy:
    """What purple answers a task it cannot work on (e.g. SWE-bench without an LLM)."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    async def run(self, task: TaskContext) -> RunResult:
        return RunResult(task_id=task.task_id, policy=self.name, status="error", reason=self.why)


def policy_factory(settings: PurpleSettings) -> Callable[[str], Policy]:
    """A fresh policy per task (no state shared between tasks), for a task kind: ``rca_task``
    (the ReAct agent with RCA tools, or the offline analyst) or ``swe_task`` (the ReAct agent
    with the SWE toolset; there is no offline policy for it)."""
    use_llm = settings.effective_policy() == "react"

    def make(kind: str = "rca_task") -> Policy:
        if kind == "swe_task" and not use_llm:
            return NoPolicy(
                "none",
                "SWE-bench tasks need an LLM: set OPENAI_API_KEY (and PURPLE_POLICY=react or auto)",
            )
        return build_policy(
            model=settings.model if use_llm else None,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            mode=settings.mode,
            agent={
                "step_limit": settings.step_limit,
                "cost_limit": settings.cost_limit,
                "wall_time_limit_s": settings.wall_time_limit_s,
                "context_budget_tokens": settings.context_budget_tokens,
            },
            llm={
                "timeout_s": settings.llm_timeout_s,
                "max_retries": settings.llm_retries,
                "prices": settings.prices,
            },
            trajectory_dir=settings.trajectory_dir,
            toolset=SweToolset() if kind == "swe_task" else None,
        )

    return make
