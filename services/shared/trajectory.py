"""A task's trajectory as purple serves it (``GET /tasks/{id}/trajectory``): the one type that
purple builds and that green and ``arena`` read back (to show it, or to convert it to ATIF:
:mod:`services.shared.atif`).

Purple builds it from the events file its agent appends as it works, so it exists while the task
runs. Each event keeps ``t``, its time in seconds since the run started: within a step it orders
the messages, model calls, commands and other events that the step lists apart.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class TrajectoryStep(BaseModel):
    step: int
    """The agent's turn (one model call and the tools it called); 0 before the first turn, and
    every step of a policy without a model (the stack-trace analyst)."""
    messages: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    llm_calls: list[dict[str, Any]] = []
    """Each model call: tokens, cost, seconds, finish reason (and retries, if any); what the
    server did not report is marked (``usage_reported``, ``cost_source``)."""
    commands: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    """Compactions, submissions and other events of the step."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    llm_seconds: float = 0.0


class TrajectoryView(BaseModel):
    task_id: str
    policy: str
    status: str
    files: list[str]
    agent_version: str | None = None
    """The version of the purple that wrote it (None: a purple from before it said)."""
    model: str | None = None
    """The model its config names (None: no model, or a purple from before it said)."""
    prompts: dict[str, str] = {}
    """The texts the agent sent first ("system", "instance"), rendered from the templates of
    its config; empty for the analyst (no LLM)."""
    steps: list[TrajectoryStep]
    tokens_in: int
    tokens_out: int
    cost: float
