"""mini-swe-agent as a purple: its ``DefaultAgent`` with its own LLM layer (litellm, any
OpenAI-compatible endpoint) and an ``Environment`` whose ``execute`` runs in green's container.

Install it beside the project (``uv pip install mini-swe-agent==2.4.6``; its litellm is large, so
it is not one of the project's dependencies), then::

    python -m services.byoa.minisweagent --port 9019 --model openai/<model> \\
        --base-url http://127.0.0.1:8000/v1 --api-key none --step-limit 30

and point green (``purple_url``) or ``arena run --purple`` at it. Each model call's ``usage`` is
counted from litellm's response and reported to green with every command, so the task's tokens are
in green's record whatever the outcome. See docs/own-agent.md.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Any

from services.byoa.green_shell import GreenShell
from services.byoa.server import create_app

DONE = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""mini-swe-agent's "I am done" line (the first line of a command's output)."""


class GreenMiniEnvironment:
    """mini-swe-agent's ``Environment`` protocol over a :class:`GreenShell`."""

    def __init__(self, shell: GreenShell, timeout: float | None = None) -> None:
        self.shell, self.timeout = shell, timeout

    def execute(self, action: dict | str, cwd: str = "", *, timeout: int | None = None) -> dict:
        from minisweagent.exceptions import Submitted

        command = action.get("command", "") if isinstance(action, dict) else str(action)
        if cwd:
            command = f"cd {shlex.quote(cwd)} && {command}"
        result = self.shell.execute(command, timeout or self.timeout)
        output: dict[str, Any] = {
            "output": result.output,
            "returncode": result.exit_code,
            "exception_info": "the command timed out and was killed" if result.timed_out else "",
        }
        lines = result.output.lstrip().splitlines()
        if lines and lines[0].strip() == DONE and result.exit_code == 0:
            raise Submitted(
                {
                    "role": "exit",
                    "content": "",
                    "extra": {"exit_status": "Submitted", "submission": ""},
                }
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "system": "Linux",
            "release": "",
            "version": "",
            "machine": "x86_64",
            "cwd": self.shell.task.paths.workspace,
            **kwargs,
        }

    def serialize(self) -> dict:
        kind = f"{type(self).__module__}.{type(self).__name__}"
        return {"info": {"config": {"environment_type": kind}}}


class CountingModel:
    """Wraps a mini-swe-agent model: each call's ``usage`` goes to the shell (then to green)."""

    def __init__(self, model: Any, shell: GreenShell) -> None:
        self.model, self.shell = model, shell

    def query(self, messages: list[dict], **kwargs: Any) -> dict:
        from minisweagent.exceptions import FormatError

        try:
            message = self.model.query(messages, **kwargs)
        except FormatError as exc:  # billed before it failed to parse
            self._count(exc.messages[0].get("extra", {}))
            raise
        self._count(message.get("extra", {}))
        return message

    def _count(self, extra: dict) -> None:
        response = extra.get("response")
        usage = (response.get("usage") if isinstance(response, dict) else None) or {}
        self.shell.add_usage(
            usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), extra.get("cost", 0)
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def make_run(model_name: str, model_kwargs: dict[str, Any], step_limit: int):
    """The :data:`~services.byoa.server.AgentRun` of mini-swe-agent's default agent, configured by
    its own ``mini.yaml`` (the prompts), with a step limit and no cost limit."""

    import yaml  # at start-up: importing litellm takes tens of seconds on a busy machine
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import builtin_config_dir
    from minisweagent.models.litellm_model import LitellmModel

    config = yaml.safe_load((Path(builtin_config_dir) / "mini.yaml").read_text())

    def run(task_text: str, shell: GreenShell) -> str:
        settings = dict(config.get("model") or {})
        settings["model_kwargs"] = {**settings.get("model_kwargs", {}), **model_kwargs}
        settings.update(model_name=model_name, cost_tracking="ignore_errors")
        model = LitellmModel(**settings)
        agent_config = {**config["agent"], "step_limit": step_limit, "cost_limit": 0}
        agent = DefaultAgent(
            CountingModel(model, shell),
            GreenMiniEnvironment(shell, shell.task.limits.command_timeout_s),
            **agent_config,
        )
        result = agent.run(task_text)
        return f"mini-swe-agent ended: {result.get('exit_status') or 'unknown'}"

    return run


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    p = argparse.ArgumentParser(description="mini-swe-agent as a purple (docs/own-agent.md)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9019)
    p.add_argument("--model", default=os.environ.get("MSWEA_MODEL_NAME", "openai/gpt-4o-mini"))
    p.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
    p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    p.add_argument("--step-limit", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=None)
    args = p.parse_args(argv)
    kwargs: dict[str, Any] = {"api_base": args.base_url, "api_key": args.api_key}
    if args.max_tokens:
        kwargs["max_tokens"] = args.max_tokens
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    app = create_app(
        make_run(args.model, kwargs, args.step_limit),
        name="mini-swe-agent",
        url=f"http://{args.host}:{args.port}",
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
