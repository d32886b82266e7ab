"""LLM access: the :class:`LLM` protocol, the OpenAI-compatible client with retries and costs,
the price table, and a scripted in-process model for tests and benchmarks.

The client is imported from :mod:`.openai_chat` by what uses it, not here: the OpenAI SDK is a
third of purple's start, and the offline analyst never needs it."""

from services.purple.llm.base import LLM, LLMError, LLMReply, ToolCall
from services.purple.llm.pricing import PRICES, cost_of
from services.purple.llm.scripted import ScriptedLLM

__all__ = [
    "LLM",
    "PRICES",
    "LLMError",
    "LLMReply",
    "ScriptedLLM",
    "ToolCall",
    "cost_of",
]
