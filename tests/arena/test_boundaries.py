"""The batch client stands alone: importing it loads nothing of green or purple."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.servers import REPO


def loaded_services(module: str) -> list[str]:
    """The ``services.*`` modules a fresh interpreter has loaded after importing ``module``."""
    code = (
        f"import sys, json, {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('services.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_the_arena_client_imports_only_shared():
    loaded = loaded_services("services.arena.app")
    assert "services.arena.batch" in loaded and "services.shared.scores" in loaded
    assert [m for m in loaded if not m.startswith(("services.arena", "services.shared"))] == []
