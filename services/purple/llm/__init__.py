"""LLM access: the :class:`LLM` protocol, the OpenAI-compatible client with retries and costs,
the price table, and a scripted in-process model for tests and benchmarks."""

from services.purple.llm.base import LLM, LLMError, LLMReply, ToolCall
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.purple.llm.pricing import PRICES, cost_of
from services.purple.llm.scripted import ScriptedLLM

__all__ = [
    "LLM",
    "PRICES",
    "LLMError",
    "LLMReply",
    "OpenAIChatModel",
    "OpenAIModelConfig",
    "ScriptedLLM",
    "ToolCall",
    "cost_of",
]
