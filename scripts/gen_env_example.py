"""Write .env.example from the settings classes (their field docstrings are the documentation).

uv run python scripts/gen_env_example.py          # rewrite .env.example
uv run python scripts/gen_env_example.py --check  # exit 1 if it is out of date (tests do this)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from pydantic_settings import BaseSettings

from services.green.config import GROUPS as GREEN_GROUPS
from services.green.config import GreenSettings
from services.purple.config import PurpleSettings
from services.shared.telemetry import TracingSettings

HEADER = """\
# Settings of the ARVO RCA arena. Copy to .env and edit; every variable is optional.
# Generated from services/*/config.py by scripts/gen_env_example.py: edit the docstrings there.
# First the ones a user sets; below them every tunable, under its heading.
"""

USER_SETS: tuple[str, ...] = (
    "GREEN_ASSET_SOURCE",
    "GREEN_IMAGE_TEMPLATE",
    "GREEN_DATABASE_URL",
    "GREEN_API_TOKEN",
    "GREEN_HOST",
    "GREEN_PORT",
    "GREEN_PUBLIC_URL",
    "GREEN_PURPLE_URL",
    "GREEN_MAX_CONCURRENT_TASKS",
    "GREEN_TASK_TIMEOUT_S",
    "GREEN_MAX_STEPS",
    "GREEN_CONTAINER_DISK_BYTES",
    "GREEN_IMAGE_BUDGET_GB",
    "GREEN_DOCKER_HOSTS",
    "PURPLE_POLICY",
    "PURPLE_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "PURPLE_AGENT_CONFIG",
    "PURPLE_MAX_TOKENS",
    "PURPLE_CONTEXT_WINDOW",
)
"""The variables a user sets first, in this order, at the top of the file."""


def env_name(cls: type[BaseSettings], name: str, field) -> str:
    """The environment variable of a settings field: its first alias, else prefix + name."""
    alias = field.validation_alias
    if alias is not None and hasattr(alias, "choices"):
        return str(alias.choices[0])
    return f"{cls.model_config.get('env_prefix', '')}{name}".upper()


def _doc(cls: type) -> str:
    """A class's docstring as a heading: its first sentence, without the full stop."""
    return (cls.__doc__ or cls.__name__).strip().split(".")[0]


GROUPS: tuple[tuple[str, str], ...] = (
    *(
        (
            f"green: {_doc(group)}",
            "|".join(env_name(GreenSettings, f, field) for f, field in fields),
        )
        for group in GREEN_GROUPS
        if (fields := [(f, GreenSettings.model_fields[f]) for f in group.model_fields])
    ),
    (
        "purple: the model",
        r"PURPLE_(MODE|LLM_.*|STOP|TEMPERATURE|TOP_P|SEED|EXTRA_BODY|PRICES|FALLBACK_TO_ANALYST)"
        r"|OPENAI_.*",
    ),
    ("purple: the agent's limits", r"PURPLE_(STEP_LIMIT|COST_LIMIT|WALL_TIME_LIMIT_S|CONTEXT_.*)"),
    ("purple: the service", r"PURPLE_.*"),
    ("both services: OpenTelemetry traces (off unless an endpoint is set)", r"OTEL_.*"),
)
"""Headings of the tunables: green's are its settings' groups (each group's docstring, its
variables); purple's and the traces' are patterns. A variable goes under the first heading whose
pattern matches it whole."""
SHARED = """\
# ---- both services ---------------------------------------------------------------------------
# Name of the log run folder under the log dirs; give both services the same value to share
# logs/log_<timestamp>/ (docker compose does). Default: log_<start time>.
# ARENA_LOG_RUN=
"""


def _value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dict | list | tuple):
        return json.dumps(v)
    return str(v)


def _entry(env: str, field) -> str:
    doc = (field.description or "").strip()
    lines = [f"# {line.strip()}\n" for line in doc.splitlines()]
    lines.append(f"# {env}={_value(field.get_default(call_default_factory=True))}\n\n")
    return "".join(lines)


def _heading(title: str) -> str:
    return f"# ---- {title} " + "-" * max(4, 88 - len(title)) + "\n"


def _group(env: str) -> str:
    for title, pattern in GROUPS:
        if re.fullmatch(pattern, env):
            return title
    raise ValueError(f"{env}: no heading in GROUPS matches it")


def render() -> str:
    entries = {
        env_name(cls, name, field): field
        for cls in (GreenSettings, PurpleSettings, TracingSettings)
        for name, field in cls.model_fields.items()
    }
    out = [HEADER, _heading("what you set")]
    out += [_entry(env, entries[env]) for env in USER_SETS]
    out.append(SHARED)
    for title, _ in GROUPS:
        rest = [env for env in entries if env not in USER_SETS and _group(env) == title]
        if rest:
            out.append(_heading(title))
            out += [_entry(env, entries[env]) for env in rest]
    return "".join(out).rstrip() + "\n"


def main() -> int:
    target = Path(__file__).resolve().parents[1] / ".env.example"
    text = render()
    if "--check" in sys.argv:
        if not target.exists() or target.read_text() != text:
            print(".env.example is out of date: run scripts/gen_env_example.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
