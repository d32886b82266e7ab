"""The LLM seam: one async call from OpenAI chat messages to a reply with usage and cost."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel


class ToolCall(BaseModel):
    """One native tool call of a reply; ``arguments`` is the raw JSON text the model wrote."""

    id: str
    name: str
    arguments: str = "{}"


class LLMReply(BaseModel):
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tokens_in: int = 0
    tokens_out: int = 0
    usage_reported: bool = True
    """False when the server's answer had no usage: the tokens above are 0, not measured."""
    cached_tokens: int | None = None
    """Of ``tokens_in``, those the server says it served from its prompt cache (None: it did
    not say)."""
    cost: float = 0.0
    cost_source: Literal["server", "prices"] | None = None
    """Where ``cost`` comes from: the server's answer (``usage.cost``), the price table
    (:mod:`services.purple.llm.pricing`), or nowhere (None: an unknown price, counted as 0)."""
    reasoning: str | None = None
    """The reasoning the server returned beside the reply (``reasoning_content``), when it did;
    recorded in the trajectory, never sent back to the model."""
    finish_reason: str | None = None
    duration_s: float = 0.0
    retries: list[str] = []
    """Failed attempts before this reply, each in a line (what was retried and why)."""

    def assistant_message(self) -> dict[str, Any]:
        """The OpenAI chat message that records this reply in the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return msg


class LLMError(RuntimeError):
    """The model could not be queried (non-transient error, or retries exhausted). An expected
    failure of the model's server, logged as one line, never with a traceback."""


class ContextOverflow(LLMError):
    """The server refused the request as longer than the model's context window
    (``context_length_exceeded``). ``window``: the window the server named, when it did."""

    def __init__(self, message: str, window: int | None = None) -> None:
        super().__init__(message)
        self.window = window


@runtime_checkable
class LLM(Protocol):
    """Anything that answers OpenAI-style chat messages."""

    name: str

    async def query(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> LLMReply: ...
