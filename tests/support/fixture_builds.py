"""Build the bundled tasks' images and assets as a user does (``python -m fixtures.build`` or
``fixtures.swebench.build``), failing the calling test with the build's words."""

from __future__ import annotations

import subprocess
import sys

from fixtures.catalog import REPO_ROOT


def build_fixtures(module: str = "fixtures.build", *args: str, timeout: float = 1800) -> None:
    """Run ``python -m module args`` in the repository (a build that is cached confirms it)."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"fixture build failed:\n{proc.stdout}\n{proc.stderr}"
