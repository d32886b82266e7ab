"""The one policy factory: from purple's settings to the policy that works on a task.

No LLM (no API key, or ``PURPLE_POLICY=stacktrace``) -> the stack-trace analyst (offline,
deterministic). An LLM -> the ReAct agent with the toolset of the task's kind and the agent
config (``PURPLE_AGENT_CONFIG``, with the ``PURPLE_*`` limits and request settings set in the
environment on top);
optionally the analyst submits when the agent ends without an accepted submission
(``PURPLE_FALLBACK_TO_ANALYST``, off by default: it mixes the baseline into the agent's score).
"""

from __future__ import annotations

import shlex
import time

from services.purple.agent.config import AgentConfig, ModelParams
from services.purple.agent.loop import ReactAgent
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.config import PurpleSettings
from services.purple.protocols import Policy, RunResult, TaskContext
from services.purple.tools.toolsets import TOOLSETS, RcaToolset

AGENT_SETTINGS = (
    "mode",
    "step_limit",
    "cost_limit",
    "wall_time_limit_s",
    "context_budget_tokens",
    "context_window",
)
"""Settings that are :class:`AgentConfig` fields of the same name."""
MODEL_SETTINGS = ("max_tokens", "stop", "temperature", "top_p", "seed", "extra_body")
"""Settings that are fields of the config's ``[llm]`` table (:class:`ModelParams`)."""


OFFLINE_KINDS = {"rca_task"}
"""The assignments the offline analyst answers. A reproduce task (``poc_task``) gets the floor,
an empty input (:class:`EmptyInput`); the others (fixing an issue or a vulnerability) need an
LLM: without one purple says so and submits nothing (the task scores 0, honestly)."""


def build_policy(settings: PurpleSettings, kind: str = "rca_task") -> Policy:
    """A fresh policy for one task of ``kind`` (``rca_task``, ``swe_task``, ``poc_task``,
    ``fix_task``; no state is shared between tasks). Offline, only ``rca_task`` has a policy."""
    analyst = StackTraceAnalyst(trajectory_dir=settings.trajectory_dir)
    if settings.effective_policy() != "react":
        if kind == "poc_task":
            return EmptyInput()
        if kind not in OFFLINE_KINDS:
            what = "SWE-bench tasks" if kind == "swe_task" else f"{kind} tasks"
            return NoPolicy(
                "none",
                f"{what} need an LLM: set OPENAI_API_KEY (and PURPLE_POLICY=react or auto)",
            )
        return analyst
    # The OpenAI SDK is imported only for a policy with a model: it is a third of purple's
    # start, which the offline analyst does without.
    from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig

    config = agent_config(settings)
    llm = OpenAIChatModel(
        OpenAIModelConfig(
            model=settings.model,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_retries,
            timeout_retries=settings.llm_timeout_retries,
            prices=settings.prices,
            **config.llm.model_dump(),
        )
    )
    toolset = TOOLSETS.get(kind, RcaToolset)()
    react = ReactAgent(llm, config, trajectory_dir=settings.trajectory_dir, toolset=toolset)
    if settings.fallback_to_analyst and kind in OFFLINE_KINDS:
        return FallbackPolicy(react, analyst)
    return react


def agent_config(settings: PurpleSettings) -> AgentConfig:
    """The agent config: the file ``settings.agent_config`` (if any), and the limits of the
    settings on top: all of them without a file, those set in the environment with one."""
    limits = {name: getattr(settings, name) for name in AGENT_SETTINGS}
    params = {k: getattr(settings, k) for k in MODEL_SETTINGS if k in settings.model_fields_set}
    if settings.agent_config is None:
        return AgentConfig(**limits, llm=ModelParams(**params))
    explicit = {k: v for k, v in limits.items() if k in settings.model_fields_set}
    config = AgentConfig.load(settings.agent_config, **explicit)
    if params:  # the environment's request settings on top of the file's [llm] table
        llm = ModelParams.model_validate({**config.llm.model_dump(), **params})
        config = config.model_copy(update={"llm": llm})
    return config


class NoPolicy:
    """What purple answers a task it cannot work on (e.g. SWE-bench without an LLM)."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    async def run(self, task: TaskContext) -> RunResult:
        return RunResult(task_id=task.task_id, policy=self.name, status="error", reason=self.why)


class EmptyInput:
    """Offline, a reproduce task's honest floor: an empty input, submitted. It reproduces nothing
    (every metric 0, as the kind's ``empty`` floor), and the task ends completed, judged, rather
    than failed for want of a submission."""

    name = "empty-input"
    REASON = (
        "no LLM: the offline policy submits an empty input (the floor, which reproduces nothing)"
    )

    async def run(self, task: TaskContext) -> RunResult:
        started = time.monotonic()
        path = task.paths.submission or "/workspace/shared/poc"
        result = await task.env.execute(f": > {shlex.quote(path)}")
        reply = await task.env.submit(task.usage)
        accepted = result.exit_code == 0 and reply.accepted
        return RunResult(
            task_id=task.task_id,
            policy=self.name,
            status="submitted" if accepted else "error",
            reason=self.REASON if accepted else "; ".join(reply.errors) or result.output[-300:],
            stats=task.usage,
            duration_s=time.monotonic() - started,
        )


class FallbackPolicy:
    """Run ``primary``; if it ends without an accepted submission, run ``fallback``.
    The result is the fallback's, with the usage of both (the task's) and both commands."""

    def __init__(self, primary: Policy, fallback: Policy) -> None:
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}+{fallback.name}"

    async def run(self, task: TaskContext) -> RunResult:
        first = await self.primary.run(task)
        if first.status == "submitted":
            return first
        second = await self.fallback.run(task)
        stats = task.usage.model_copy()  # both counted into the task's usage
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
