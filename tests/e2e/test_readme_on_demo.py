"""The README's command blocks against the stack ``make demo`` leaves: each block whole, in
order, in ``bash -e``, from a folder laid out as the repository after the demo, its documented
outcomes checked (``tests/support/readme.py``: the REST block's task waited for, the cancel
line's 409, the batch and DuckDB blocks on tasks the demo did not build).

The demo (``scripts/demo.sh``, as a user runs it) gets a compose project, ports, token and log
folders and image tags of its own (``tests/e2e/compose.py`` ``demo_env``), so a user's demo
stack is never touched; the blocks' ``localhost:9009`` is this stack's port.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.compose import demo_down, demo_env, require_compose, run_demo
from tests.support.readme import run_blocks, user_folder

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
# past pytest's 600 s: a demo, which may build the images, then every README block; a loaded machine (load 25 and more) builds for minutes


def test_readme_blocks_on_the_demo_stack(tmp_path: Path) -> None:
    require_compose()
    env = demo_env(tmp_path, "readme")
    try:
        proc = run_demo(env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
        token = (Path(env["ARENA_TOKEN_DIR"]) / "operator-token").read_text().strip()
        home = tmp_path / "repo"
        port = env["ARENA_GREEN_PORT"]
        replace = {"localhost:9009": f"localhost:{port}", "127.0.0.1:9009": f"127.0.0.1:{port}"}
        assert run_blocks(home, user_folder(home, token), replace) >= 4
        assert (home / "results" / "baseline" / "leaderboard.json").is_file()
        # the batch block's trajectories came through green: the CLI was given no purple
        # address, and purple's own (http://purple:9019) is known only inside compose
        tasks = list((home / "results" / "baseline" / "tasks").iterdir())
        assert len(tasks) == 2 and all((t / "trajectory.json").is_file() for t in tasks)
    finally:
        demo_down(env)
