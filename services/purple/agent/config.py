"""How an agent run is configured. Written into every trajectory, so each run records how it was made."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["tool_calls", "text"] = "tool_calls"
    """Native OpenAI tool calls, or the textual ----BEGIN_FUNCTION_CALL---- format."""
    step_limit: int = Field(40, ge=0)
    """Most LLM calls per run (0 = no limit); green's own step limit also applies."""
    cost_limit: float = Field(2.0, ge=0)
    """Most dollars per run (0 = no limit)."""
    wall_time_limit_s: float = Field(1800.0, ge=0)
    """Most seconds per run (0 = no limit); green's task deadline also applies."""
    deadline_margin_s: float = Field(15.0, ge=0)
    """Stop this many seconds before green's deadline, so there is time left to submit."""
    command_timeout_s: float | None = Field(None, gt=0)
    """Timeout sent with each command; None leaves it to green."""
    observation_limit: int = Field(12_000, ge=200)
    """Most characters of one observation; longer ones keep head and tail with a note."""
    context_budget_tokens: int = Field(96_000, ge=1_000)
    """Estimated conversation size at which old turns are compacted into a summary."""
    keep_last_turns: int = Field(6, ge=1)
    """Turns (assistant reply + observations) kept verbatim when compacting."""
    max_consecutive_format_errors: int = Field(4, ge=1)
    """That many unusable replies in a row end the run (status format_errors)."""
    steps_left_warning: int = Field(3, ge=0)
    """From this many steps left on, observations remind the model to submit."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt (tools and format are still appended)."""
