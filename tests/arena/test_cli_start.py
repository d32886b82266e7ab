"""``arena`` starts without matplotlib: only a plot imports it (0.6 s of CPU a start otherwise,
for every ``arena tasks``, ``arena poll`` or ``arena report`` of a run with no plot to draw)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.servers import REPO


def test_the_arena_cli_imports_no_plotting_library_until_it_plots():
    code = (
        "import sys, services.arena.app; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'matplotlib', 'numpy'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
