"""Every command block of the README (and of the docs pages it sends a newcomer to) that a user
types is run, so the pages cannot drift.

The blocks run as pasted (``tests/support/readme.py``: each whole, in order, in ``bash -e``,
its documented outcomes checked) from a folder laid out like the repository after ``make demo``,
against a real green on a free port (the README's ``localhost:9009``) with the locally built
tasks and a real purple (scripted: its first command takes a few seconds, so the REST block's
task is still running when the block starts waiting for it). The same blocks run against the
stack ``make demo`` itself leaves in ``tests/e2e/test_readme_on_demo.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.readme import (
    ALL_PAGES,
    OUTCOMES,
    PAGES,
    README,
    page_blocks,
    run_blocks,
    user_folder,
)
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def test_every_bash_block_is_marked_and_skips_say_why() -> None:
    blocks = page_blocks(ALL_PAGES)  # raises on a block without a marker
    assert len(blocks) >= 8
    skipped = {(b.page, b.line): b.skip for b in blocks if b.skip}
    assert all(len(why) > 20 for why in skipped.values()), skipped
    run = [b for b in blocks if not b.skip]
    pages = {p.relative_to(README.parent).as_posix() for p in PAGES}
    assert all(b.page in pages for b in run), "a run block on a page the test never runs"
    assert len(run) >= 4, "most blocks a user types are run"
    assert all(b.outcomes for b in run), "every run block has its documented outcomes checked"
    assert len(OUTCOMES) == len(run)


def test_the_readme_runs_its_curl_and_its_arena_run() -> None:
    """The README's newcomer path: one ``curl`` and one ``arena run``, both run blocks."""
    run = [b.body for b in page_blocks([README]) if not b.skip]
    assert any("curl" in body and "/tasks" in body for body in run), run
    assert any("arena run" in body for body in run), run


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
    env = user_folder(home, OPERATOR_TOKEN)
    replace = {
        "localhost:9009": host,
        "127.0.0.1:9009": host,
        "http://purple:9019": purple_url,
    }
    assert run_blocks(home, env, replace) >= 4
    assert (home / "results" / "baseline" / "report.md").is_file()  # the batch block's report
