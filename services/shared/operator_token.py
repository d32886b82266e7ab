"""Where a client on green's machine finds green's operator token when none is given."""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_TOKEN_FILES = (Path("data/operator-token"), Path("data/compose/operator-token"))
"""Where clients on green's machine look for the operator token when none is given: green's
default GREEN_API_TOKEN_FILE, and the file the compose stack keeps on the host."""


def find_local_token(environ: dict[str, str] | None = None) -> str | None:
    """The operator token for a client on green's machine: GREEN_API_TOKEN, else the file that
    GREEN_API_TOKEN_FILE names, else the first of :data:`LOCAL_TOKEN_FILES` that exists."""
    env = os.environ if environ is None else environ
    if token := env.get("GREEN_API_TOKEN", "").strip():
        return token
    candidates = [Path(env["GREEN_API_TOKEN_FILE"])] if env.get("GREEN_API_TOKEN_FILE") else []
    for path in [*candidates, *LOCAL_TOKEN_FILES]:
        try:
            if token := path.read_text().strip():
                return token
        except OSError:
            continue
    return None
