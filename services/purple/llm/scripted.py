"""An in-process LLM that plays back canned replies: for unit tests, the benchmark and dry runs.

(The HTTP-level twin, a real OpenAI-compatible server, is tests/support/fake_llm.py.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.purple.llm.base import LLMError, LLMReply

Script = LLMReply | Callable[[list[dict[str, Any]]], LLMReply]


class ScriptedLLM:
    def __init__(
        self,
        replies: list[Script] | None = None,
        *,
        default: Script | None = None,
        name: str = "scripted",
    ) -> None:
        self.replies = list(replies or [])
        self.default = default
        self.name = name
        self.calls: list[dict[str, Any]] = []
        """Every query: ``{"messages": [...], "tools": [...]}`` (copies of the lists)."""

    async def query(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> LLMReply:
        self.calls.append({"messages": list(messages), "tools": tools})
        if self.replies:
            item = self.replies.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise LLMError("scripted LLM: no replies left")
        return item(messages) if callable(item) else item.model_copy(deep=True)

    def serialize(self) -> dict[str, Any]:
        return {"class": type(self).__name__, "name": self.name}
