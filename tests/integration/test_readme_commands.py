"""Every command block of the README that a newcomer types is run, so the README cannot drift.

Each fenced ``bash`` block of README.md carries a marker on the line above it:
``<!-- readme-test: run -->`` (run here) or ``<!-- readme-test: skip: <reason> -->`` (the
internet, other machines, or the checks CI runs itself). A block without a marker fails the test,
so a new block needs a decision.

The blocks run as written, with bash (``set -euo pipefail``), from a folder laid out like the
repository after ``make demo`` (``data/compose/operator-token``), against a real green on a free
port (the README's ``localhost:9009``) with the locally built tasks and a real purple (scripted:
its first command takes a few seconds, so a task is still running when the README cancels it).
``curl`` fails on an HTTP error here (``--fail-with-body``), so a wrong route or token fails the
block; ``uv run`` runs in this repository's environment.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fixtures.catalog import REPO_ROOT
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

README = REPO_ROOT / "README.md"
MARKER = re.compile(r"<!--\s*readme-test:\s*(run|skip:\s*(?P<why>.+?))\s*-->")
FENCE = re.compile(r"^```bash\n(?P<body>.*?)^```", re.S | re.M)


def readme_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line, block, why skipped or None) of every ```bash block, with its marker."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(above)
        if marker is None:
            raise AssertionError(
                f"README.md:{line}: a bash block without a '<!-- readme-test: run -->' or "
                "'<!-- readme-test: skip: <reason> -->' line above it"
            )
        out.append((line, m.group("body"), marker.group("why")))
    return out


def test_every_bash_block_is_marked_and_skips_say_why() -> None:
    blocks = readme_blocks(README.read_text())
    assert len(blocks) >= 8
    skipped = {line: why for line, _, why in blocks if why}
    assert all(len(why) > 20 for why in skipped.values()), skipped
    assert sum(why is None for _, _, why in blocks) >= 3, "most blocks a user types are run"


PREAMBLE = """set -euo pipefail
curl() { command curl --fail-with-body --show-error --max-time 120 "$@"; }
"""


def test_readme_command_blocks_run(start_green, scripted_purple, tmp_path: Path) -> None:
    purple_url, _ = scripted_purple(
        Script(
            commands=["sleep 6", "ls"],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green(purple_url=purple_url)
    host = green.url.removeprefix("http://")
    home = tmp_path / "repo"
    (home / "data" / "compose").mkdir(parents=True)
    (home / "data" / "compose" / "operator-token").write_text(OPERATOR_TOKEN + "\n")
    env = {
        # A newcomer's PATH: uv, not this environment's bin (a bare `arena` must not work here).
        "PATH": f"{Path(shutil.which('uv') or '/usr/bin/uv').parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "UV_PROJECT": str(REPO_ROOT),  # `uv run arena` from the user's folder
        "UV_FROZEN": "1",
    }
    ran = 0
    for line, block, why in readme_blocks(README.read_text()):
        if why:
            continue
        script = (
            block.replace("localhost:9009", host)
            .replace("127.0.0.1:9009", host)
            .replace("http://purple:9019", purple_url)
        )
        proc = subprocess.run(
            ["bash", "-c", PREAMBLE + script],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, (
            f"README.md:{line}: the block failed (exit {proc.returncode})\n{block}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
        )
        ran += 1
    assert ran >= 3
    assert (home / "results" / "baseline" / "report.md").is_file()  # the batch block's report
