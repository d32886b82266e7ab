"""Purple's settings: one pydantic-settings class (prefix PURPLE_; the OpenAI variables keep
their usual names). Every field is documented here and in .env.example."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PurpleSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PURPLE_", env_file=".env", extra="ignore", use_attribute_docstrings=True
    )

    host: str = "127.0.0.1"
    """Interface to listen on."""
    port: int = 9019
    """Port to listen on."""
    public_url: str | None = None
    """URL in the agent card. Default: http://<host>:<port>."""

    policy: Literal["auto", "react", "stacktrace"] = "auto"
    """react: the LLM agent; stacktrace: the offline analyst; auto: react when an API key is set."""
    model: str = "gpt-4o-mini"
    """Model name sent to the OpenAI-compatible endpoint."""
    openai_base_url: str | None = Field(
        None, validation_alias=AliasChoices("OPENAI_BASE_URL", "PURPLE_OPENAI_BASE_URL")
    )
    """OpenAI-compatible endpoint (default: OpenAI's)."""
    openai_api_key: str | None = Field(
        None, validation_alias=AliasChoices("OPENAI_API_KEY", "PURPLE_OPENAI_API_KEY")
    )
    """API key; without one purple runs the stack-trace analyst."""
    mode: Literal["tool_calls", "text"] = "tool_calls"
    """Native tool calls, or the textual ----BEGIN_FUNCTION_CALL---- format."""
    llm_timeout_s: float = 120.0
    """Timeout of one LLM request."""
    llm_retries: int = 4
    """Retries (exponential backoff) on transient LLM errors (429, 5xx, no connection)."""
    llm_timeout_retries: int = 0
    """Times an LLM request that timed out is sent again (0: never: a busy server is still
    generating the abandoned reply, and a copy would queue behind it)."""
    max_tokens: int | None = None
    """Most tokens of one model reply (also the [llm] table of PURPLE_AGENT_CONFIG); unset: the
    server's default, which on llama.cpp-style servers runs until the context is full."""
    stop: list[str] | None = None
    """Stop sequences, JSON: ["</s>"]."""
    temperature: float | None = None
    """Sampling temperature; unset: the server's default."""
    top_p: float | None = None
    """Nucleus sampling; unset: the server's default."""
    seed: int | None = None
    """Sampling seed; unset: none sent."""
    extra_body: dict[str, Any] = {}
    """Extra request fields for the server, JSON: {"top_k": 20}."""
    context_window: int | None = None
    """The model's context window in tokens; unset: asked from the server when it says
    (llama.cpp /props, vLLM /v1/models). The compaction budget is fitted to it."""
    prices: dict[str, tuple[float, float]] = {}
    """Extra prices, JSON: {"model": [usd_per_mtok_in, usd_per_mtok_out]}."""

    agent_config: Path | None = None
    """A TOML file of agent config fields (prompt templates, limits...; see
    services/purple/agent/config.py and agent/prompts/rca.toml). The PURPLE_ limits below,
    when set, override it."""
    fallback_to_analyst: bool = False
    """When the agent ends without an accepted answer, let the stack-trace analyst submit
    (mixes the baseline into the agent's score)."""

    step_limit: int = 40
    """Most LLM turns (steps) per task."""
    cost_limit: float = 2.0
    """Most dollars per task."""
    wall_time_limit_s: float = 1800.0
    """Most seconds per task."""
    context_budget_tokens: int = 96_000
    """Conversation size at which old turns are compacted."""

    green_url: str | None = None
    """Green to use for a plain-text task (no data part); structured tasks name their green."""
    green_timeout_s: float = 300.0
    """HTTP timeout of one request to green (a command may run long)."""
    max_concurrent_tasks: int = 8
    """Tasks worked on at once; more wait."""
    log_dir: Path = Path("logs")
    """Run folders log_<timestamp>/ (shared with green when ARENA_LOG_RUN matches)."""
    trajectory_dir: Path = Path("data/trajectories")
    """What purple keeps of its tasks: each task's trajectory files, and its record under
    tasks/ (GET /tasks, GET /tasks/{id} and its trajectory answer from them, across restarts)."""

    def reachable_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def effective_policy(self) -> Literal["react", "stacktrace"]:
        if self.policy == "auto":
            return "react" if self.openai_api_key else "stacktrace"
        return self.policy
