"""The agent plane over MCP (streamable HTTP at ``/mcp``, the task's token as the bearer)."""
