"""Which policy purple runs, from its settings: the ReAct agent with an LLM, or the analyst."""

from __future__ import annotations

from collections.abc import Callable

from services.purple.agent.factory import build_policy
from services.purple.config import PurpleSettings
from services.purple.environment import Policy


def policy_factory(settings: PurpleSettings) -> Callable[[], Policy]:
    """A fresh policy per task (no state shared between tasks)."""
    use_llm = settings.effective_policy() == "react"

    def make() -> Policy:
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
            llm={"timeout_s": settings.llm_timeout_s, "max_retries": settings.llm_retries,
                 "prices": settings.prices},
            trajectory_dir=settings.trajectory_dir,
        )

    return make
