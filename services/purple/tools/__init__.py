"""Tools the agent can call: the registry (schemas, prompt text and validation
from a pydantic model of each tool's signature) and the RCA
tools, which all work through a :class:`~services.purple.protocols.TaskEnvironment`."""

from services.purple.tools.registry import Tool, ToolCallError, ToolRegistry, make_tool

__all__ = ["Tool", "ToolCallError", "ToolRegistry", "make_tool"]
