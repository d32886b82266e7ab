"""Write .env.example from the settings classes (their field docstrings are the documentation).

uv run python scripts/gen_env_example.py          # rewrite .env.example
uv run python scripts/gen_env_example.py --check  # exit 1 if it is out of date (tests do this)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic_settings import BaseSettings

from services.green.config import GreenSettings
from services.purple.config import PurpleSettings
from services.shared.telemetry import TracingSettings

HEADER = """\
# Settings of the ARVO RCA arena. Copy to .env and edit; every variable is optional.
# Generated from services/*/config.py by scripts/gen_env_example.py: edit the docstrings there.
"""
SHARED = """\
# ---- both services -------------------------------------------------------------------------
# Name of the log run folder under the log dirs; give both services the same value to share
# logs/log_<timestamp>/ (docker compose does). Default: log_<start time>.
# ARENA_LOG_RUN=
"""


def env_name(cls: type[BaseSettings], name: str, field) -> str:
    """The environment variable of a settings field: its first alias, else prefix + name."""
    alias = field.validation_alias
    if alias is not None and hasattr(alias, "choices"):
        return str(alias.choices[0])
    return f"{cls.model_config.get('env_prefix', '')}{name}".upper()


def _value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dict | list | tuple):
        return json.dumps(v)
    return str(v)


def render() -> str:
    out = [HEADER, SHARED]
    sections = (
        ("both services: OpenTelemetry traces (off unless an endpoint is set)", TracingSettings),
        ("green", GreenSettings),
        ("purple", PurpleSettings),
    )
    for title, cls in sections:
        out.append(f"# ---- {title} " + "-" * max(4, 88 - len(title)) + "\n")
        for name, field in cls.model_fields.items():
            doc = (field.description or "").strip()
            for line in doc.splitlines():
                out.append(f"# {line.strip()}\n")
            env = env_name(cls, name, field)
            out.append(f"# {env}={_value(field.get_default(call_default_factory=True))}\n\n")
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
