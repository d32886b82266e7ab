"""Any MCP coding agent as a purple: green's task becomes a prompt and an MCP configuration
pointing at green's ``/mcp`` with the task's token, and a configured command line runs the agent
(Claude Code, Codex CLI, Gemini CLI, OpenHands, mini-swe-agent or anything else)::

    python -m services.byoa.mcp_agent --port 9029 -- \\
        claude -p {prompt} --mcp-config {mcp_config} --strict-mcp-config \\
        --disallowedTools WebSearch,WebFetch --output-format json

The command's words are split once, then each placeholder is filled in its word (no shell, so
green's text is never a command): ``{prompt}`` (the prompt's text), ``{prompt_file}``,
``{mcp_config}`` (``{"mcpServers": {"arena": {"type": "http", "url": ..., "headers":
{"Authorization": "Bearer <token>"}}}}``), ``{mcp_url}``, ``{workdir}``. The environment also
carries ``ARENA_MCP_URL`` and ``ARENA_MCP_TOKEN`` (for agents that read a bearer from a variable).

It runs in a fresh, empty folder of its own (the two files, nothing of green's), in a process
group of its own that is killed at the task's deadline or when green cancels the task. The usage
the agent prints (a JSON ``usage`` or ``stats`` object with input/output or prompt/completion
tokens, and a ``total_cost_usd`` or ``cost_usd``, as Claude Code's ``--output-format json``,
Codex's ``--json`` and Gemini CLI's ``--output-format json`` print) is reported to green. docs/own-agent.md has a recipe per agent.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.byoa.green_shell import GreenShell, TaskOver
from services.byoa.server import create_app
from services.shared.protocol import Usage

SERVER_NAME = "arena"
"""The MCP server's name in the configuration (the agent's tools read ``mcp__arena__run_bash``
and the like in some agents)."""
KILL_GRACE_S = 5.0
"""Between SIGTERM to the agent's process group and SIGKILL."""
USAGE_TAIL_BYTES = 1 << 20
"""How much of the end of the agent's output is read for its usage."""
TOKENS_IN = ("input_tokens", "prompt_tokens", "inputTokens")
TOKENS_OUT = ("output_tokens", "completion_tokens", "outputTokens")
PREAMBLE = """You work on this task through the tools of the MCP server `{name}`: `run_bash` runs a
command in the task's container (where `execute: <command>` is said below), `read_file` and
`search_code` read it, and `submit` hands in your answer (where `submit` is said below; for a
root-cause task it takes the locations and reasoning and writes loc.json for you). Use no other
tool to reach the task: its files are only in that container.

"""


def prompt_of(task_text: str) -> str:
    return PREAMBLE.format(name=SERVER_NAME) + task_text


def mcp_config(url: str, token: str) -> dict[str, Any]:
    return {
        "mcpServers": {
            SERVER_NAME: {
                "type": "http",
                "url": url,
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }


def command_line(template: list[str], values: dict[str, str]) -> list[str]:
    """The agent's argv: each word of ``template`` with its placeholders filled."""
    words = []
    for word in template:
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        words.append(word)
    return words


def agent_env(url: str, token: str) -> dict[str, str]:
    """The adapter's environment, less anything of green's, plus the MCP server's address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GREEN_", "ARENA_"))}
    return env | {"ARENA_MCP_URL": url, "ARENA_MCP_TOKEN": token}


def _usage_in(value: Any) -> Usage | None:
    """The usage a JSON value names, the last one found (depth-first)."""
    found: Usage | None = None
    if isinstance(value, dict):
        usage = value.get("usage", value.get("stats"))  # Gemini CLI's JSON says "stats"
        if isinstance(usage, dict) and any(k in usage for k in TOKENS_IN):
            tin = next((usage[k] for k in TOKENS_IN if k in usage), 0)
            tout = next((usage[k] for k in TOKENS_OUT if k in usage), 0)
            cost = value.get("total_cost_usd", value.get("cost_usd", usage.get("cost", 0.0)))
            try:
                found = Usage(
                    tokens_in=int(tin or 0), tokens_out=int(tout or 0), cost=float(cost or 0)
                )
            except (TypeError, ValueError):
                found = None
        for child in value.values():
            found = _usage_in(child) or found
    elif isinstance(value, list):
        for child in value:
            found = _usage_in(child) or found
    return found


def printed_usage(output: str) -> Usage | None:
    """The last usage the agent printed: in its whole output as one JSON document, else in its
    last line that holds one."""
    try:
        return _usage_in(json.loads(output))
    except ValueError:
        pass
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                if (usage := _usage_in(json.loads(line))) is not None:
                    return usage
            except ValueError:
                continue
    return None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """End the agent's process group: SIGTERM, then SIGKILL after :data:`KILL_GRACE_S`."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            if sig is signal.SIGTERM:
                os.killpg(proc.pid, signal.SIGKILL)  # what it left behind in its group
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def make_run(template: list[str], name: str):
    """The :data:`~services.byoa.server.AgentRun` that runs ``template`` for each task."""

    def run(task_text: str, shell: GreenShell) -> str:
        task = shell.task
        url = task.green_url.rstrip("/") + "/mcp"
        with tempfile.TemporaryDirectory(prefix="agent-") as folder:
            work = Path(folder)
            prompt = prompt_of(task_text)
            (work / "prompt.md").write_text(prompt)
            config = work / "mcp.json"
            config.write_text(json.dumps(mcp_config(url, task.token), indent=1))
            config.chmod(0o600)
            argv = command_line(
                template,
                {
                    "prompt": prompt,
                    "prompt_file": str(work / "prompt.md"),
                    "mcp_config": str(config),
                    "mcp_url": url,
                    "workdir": folder,
                },
            )
            out = work / "agent.out"
            with out.open("wb") as sink:
                proc = subprocess.Popen(
                    argv,
                    cwd=folder,
                    env=agent_env(url, task.token),
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                ended = _wait(proc, task.limits.deadline, shell)
            with out.open("rb") as f:
                f.seek(max(0, out.stat().st_size - USAGE_TAIL_BYTES))
                usage = printed_usage(f.read().decode("utf-8", "replace"))
        if usage is not None:
            shell.add_usage(usage.tokens_in, usage.tokens_out, usage.cost)
        if ended == "cancelled":
            raise TaskOver("green cancelled the task")
        if ended == "deadline":
            return f"{name} was stopped at the task's deadline"
        return f"{name} exited with status {proc.returncode}"

    return run


def _wait(proc: subprocess.Popen[bytes], deadline: datetime, shell: GreenShell) -> str:
    """Wait for the agent: 'exited', or 'deadline' / 'cancelled' once its group is killed."""
    while True:
        left = (deadline - datetime.now(UTC)).total_seconds()
        try:
            proc.wait(timeout=max(0.0, min(0.5, left)))
            _kill(proc)  # whatever it left running in its group
            return "exited"
        except subprocess.TimeoutExpired:
            pass
        if shell.cancelled.is_set() or left <= 0:
            _kill(proc)
            return "cancelled" if shell.cancelled.is_set() else "deadline"


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    p = argparse.ArgumentParser(
        description="An MCP coding agent as a purple (docs/own-agent.md)",
        epilog="Everything after -- is the agent's command line, with its placeholders.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9029)
    p.add_argument("--name", default="mcp-agent", help="the agent's name on its card")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    template = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not template:
        p.error("give the agent's command line after --")
    if len(template) == 1:
        template = shlex.split(template[0])
    url = f"http://{args.host}:{args.port}"
    app = create_app(make_run(template, args.name), name=args.name, url=url, submits=False)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
