"""A scripted MCP agent: the command services/byoa/mcp_agent runs in tests, in place of a coding
agent (which needs its vendor's API). It reads the MCP configuration the adapter wrote, calls the
tools its script lists through the official MCP client, writes what it saw, and prints its usage
as Claude Code's ``--output-format json`` does.

    python tests/support/scripted_mcp_agent.py <mcp.json> <script.json>

The script: ``{"calls": [{"tool": ..., "arguments": {...}}], "hang": false, "report": <path>}``;
with ``hang`` it starts a child that sleeps and then sleeps itself, forever (the deadline ends it).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def drive(config: dict, calls: list[dict]) -> list[dict]:
    server = config["mcpServers"]["arena"]
    seen = []
    async with (
        httpx2.AsyncClient(headers=server["headers"], timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(server["url"], http_client=http)) as client,
    ):
        tools = [t.name for t in (await client.list_tools()).tools]
        seen.append({"tools": tools})
        for call in calls:
            result = await client.call_tool(call["tool"], call.get("arguments", {}))
            text = "".join(getattr(p, "text", "") for p in result.content)
            seen.append({"tool": call["tool"], "error": bool(result.is_error), "text": text})
    return seen


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    script = json.loads(Path(sys.argv[2]).read_text())
    report = {
        "cwd": sorted(os.listdir(".")),
        "env": sorted(k for k in os.environ if k.startswith(("GREEN_", "ARENA_"))),
        "pid": os.getpid(),
    }
    if script.get("hang"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        report["child"] = child.pid
        with open(script["report"], "w") as f:
            json.dump(report, f)
        while True:
            time.sleep(1)
    report["seen"] = asyncio.run(drive(config, script["calls"]))
    with open(script["report"], "w") as f:
        json.dump(report, f)
    usage = {"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 0}
    print(
        json.dumps({"type": "result", "result": "done", "usage": usage, "total_cost_usd": 0.0125})
    )


if __name__ == "__main__":
    main()
