"""How the ReAct agent is configured: its limits and its prompt templates (Jinja2).

The config is written into every trajectory, so each run records how it was made. The prompt
templates of each kind of task are in ``prompts/<toolset>.toml`` (their variables are listed
there); a config file (TOML, any of these fields; ``PURPLE_AGENT_CONFIG``) replaces them.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any, Literal

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, field_validator

PROMPTS = Path(__file__).parent / "prompts"
"""The built-in templates: ``<toolset name>.toml``."""

TEMPLATES = ("system_template", "instance_template")

_JINJA = SandboxedEnvironment(
    undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False
)


class ModelParams(BaseModel):
    """The request settings real servers need (the ``[llm]`` table of a config file; the
    ``PURPLE_`` settings of the same names override it). Recorded in every trajectory."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(None, ge=1)
    """Most tokens of one reply; None = the server's default (a llama.cpp-style server then
    generates until its context is full)."""
    stop: list[str] | None = None
    """Stop sequences."""
    temperature: float | None = Field(None, ge=0, le=2)
    """Sampling temperature; None = the server's default."""
    top_p: float | None = Field(None, gt=0, le=1)
    """Nucleus sampling; None = the server's default."""
    seed: int | None = None
    """Sampling seed; None = none sent."""
    extra_body: dict[str, Any] = {}
    """Free-form extra request fields for the server (e.g. ``{"top_k": 20}``)."""


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["tool_calls", "text"] = "tool_calls"
    """Native OpenAI tool calls, or the textual ----BEGIN_FUNCTION_CALL---- format."""
    step_limit: int = Field(40, ge=0)
    """Most LLM turns (steps) per run (0 = no limit); green's command limit also applies."""
    cost_limit: float = Field(2.0, ge=0)
    """Most dollars per run (0 = no limit)."""
    wall_time_limit_s: float = Field(1800.0, ge=0)
    """Most seconds per run (0 = no limit); green's task deadline also applies."""
    deadline_margin_s: float = Field(15.0, ge=0)
    """Stop this many seconds before green's deadline, so there is time left to submit."""
    command_timeout_s: float | None = Field(None, gt=0)
    """Timeout sent with each command; None leaves it to green."""
    observation_limit: int = Field(12_000, ge=200)
    """Most characters of one observation; longer ones keep head and tail with a note."""
    context_budget_tokens: int = Field(96_000, ge=1_000)
    """Estimated conversation size at which old turns are compacted into a summary (lowered to
    fit ``context_window``)."""
    context_window: int | None = Field(None, ge=256)
    """The model's context window in tokens; None: asked from the server (llama.cpp's /props,
    vLLM's /v1/models), else only ``context_budget_tokens`` applies."""
    llm: ModelParams = ModelParams()
    """Request settings: max_tokens, stop, temperature, top_p, seed, extra_body."""
    keep_last_turns: int = Field(6, ge=1)
    """Turns (assistant reply + observations) kept verbatim when compacting."""
    max_consecutive_format_errors: int = Field(4, ge=1)
    """That many unusable replies in a row end the run (status format_errors)."""
    steps_left_warning: int = Field(3, ge=0)
    """From this many steps (or commands) left on, observations remind the model to finish."""
    system_template: str | None = None
    """Jinja2 template of the system prompt; None: the toolset's (``prompts/<toolset>.toml``)."""
    instance_template: str | None = None
    """Jinja2 template of the first user message (``task`` is green's task text); None: the
    toolset's."""

    @field_validator(*TEMPLATES)
    @classmethod
    def _parses(cls, template: str | None) -> str | None:
        if template is not None:
            try:
                _JINJA.parse(template)
            except TemplateError as exc:
                raise ValueError(f"not a valid Jinja2 template: {exc}") from exc
        return template

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> AgentConfig:
        """A config from a TOML file of these fields, ``overrides`` on top."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"cannot read the agent config {path}: {exc}") from exc
        return cls.model_validate({**data, **overrides})

    def budget_for(self, window: int | None) -> int:
        """The compaction budget for a model of ``window`` tokens: room left for the reply
        (``llm.max_tokens``, else an eighth of the window) and a tenth for estimate error."""
        if not window:
            return self.context_budget_tokens
        reserve = self.llm.max_tokens or window // 8
        return max(256, min(self.context_budget_tokens, int((window - reserve) * 0.9)))

    def with_templates(self, toolset: str) -> AgentConfig:
        """This config, its unset templates taken from the toolset's built-in ones."""
        builtin = builtin_templates(toolset)
        missing = {k: builtin[k] for k in TEMPLATES if getattr(self, k) is None}
        return self.model_copy(update=missing) if missing else self

    def render(self, template: Literal["system_template", "instance_template"], **vars: Any) -> str:
        """One of the templates filled in (a missing variable raises)."""
        text = getattr(self, template)
        if text is None:
            raise ValueError(f"{template} is not set (see AgentConfig.with_templates)")
        return _JINJA.from_string(text).render(**vars)


@cache
def builtin_templates(toolset: str) -> dict[str, str]:
    """The templates of ``prompts/<toolset>.toml``."""
    path = PROMPTS / f"{toolset}.toml"
    if not path.is_file():
        raise ValueError(f"no built-in prompts for toolset {toolset!r} ({path} is missing)")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {k: data[k] for k in TEMPLATES}
