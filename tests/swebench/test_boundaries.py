"""What green's swebench kind uses of the SWE-bench harness loads neither green nor purple.

Stricter than the layout rule (scripts/check_layout.py lets swebench import purple, for its
runner and CLI): the judge and the instance reader that green imports must not drag purple into
green's process, whatever they import on the way."""

from __future__ import annotations

import json
import subprocess
import sys

from fixtures.catalog import REPO_ROOT


def loaded_services(module: str) -> list[str]:
    """The ``services.*`` modules a fresh interpreter has loaded after importing ``module``."""
    code = (
        f"import sys, json, {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('services.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_what_green_uses_loads_no_purple_and_no_green():
    loaded = loaded_services("services.swebench.judge, services.swebench.instances")
    assert "services.swebench.activation" in loaded
    assert [m for m in loaded if m.startswith("services.purple")] == []
    assert [m for m in loaded if m.startswith("services.green")] == []
