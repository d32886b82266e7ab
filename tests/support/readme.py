"""The README's and the docs pages' command blocks, run as a newcomer pastes them: each whole, in
order (README.md first, then the pages of :data:`PAGES`), in ``bash -e``.

Each fenced ``bash`` block of README.md and docs/*.md carries a marker on the line above it:
``<!-- readme-test: run -->`` (run) or ``<!-- readme-test: skip: <reason> -->`` (the internet,
other machines, or the checks CI runs itself). A block without a marker fails, so a new block
needs a decision. :data:`OUTCOMES` holds what each run block's comments promise (a 202, the
cancel line's 409, a report, the leaderboard rows), checked in its output: a block that exits 0
having printed an error answer fails too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fixtures.catalog import REPO_ROOT

README = REPO_ROOT / "README.md"
PAGES = [README, *(REPO_ROOT / "docs" / name for name in ("api.md", "cli.md", "tasks.md"))]
"""The pages whose run blocks are run, in this order (a block may use what an earlier one made:
docs/cli.md's walk-through reads the README's run)."""
ALL_PAGES = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
"""Every page whose bash blocks must carry a marker."""
MARKER = re.compile(r"<!--\s*readme-test:\s*(run|skip:\s*(?P<why>.+?))\s*-->")
FENCE = re.compile(r"^```bash\n(?P<body>.*?)^```", re.S | re.M)

OUTCOMES: dict[str, list[str]] = {
    # the first line of a block -> what its output must show (regular expressions)
    'auth="Authorization: Bearer $(cat data/compose/operator-token)"   # the operator': [
        r'"status":"queued"',  # README: POST /tasks, 202 with the new task
    ],
    "uv run python -m fixtures.build --only 900001 --only 900002": [
        r"results: results/baseline/results\.json",  # README: one arena run
        r"report: +results/baseline/report\.md",
    ],
    'auth="Authorization: Bearer $(cat data/compose/operator-token)"   # docs/api.md: the REST': [
        r'"status":"queued"',  # POST /tasks: 202 with the new task
        r'"status":"completed"',  # waited for its end
        r'"exit_code":0',  # its commands
        r'"detail":"task [0-9a-f-]+ already completed"\} HTTP 409',  # the cancel line
        r'"task_ids":\["[0-9a-f-]{36}"',  # POST /assessments: 202 with its tasks
        r'"database":',  # /healthz
    ],
    'auth="Authorization: Bearer $(cat data/compose/operator-token)"   # docs/api.md: A2A': [
        r'"result":\{.*"state":"(submitted|working|completed)"',  # tasks/get of the A2A task
    ],
    "uv run arena report results/baseline": [
        r"report: +results/baseline/report\.md",  # docs/cli.md's walk-through
        r"results: results/baseline-k3/results\.json",
        r"comparison: results/compare-baseline-vs-baseline-k3/compare\.md",
    ],
    "uv run python - <<'EOF'": [
        r"Localization: mean, SE and 95% interval per metric",  # the leaderboard queries
        r"\bbaseline\b",
        r"\bbaseline-k3\b",
    ],
    'auth="Authorization: Bearer $(cat data/compose/operator-token)"  # reproduce and fix': [
        r'"kind":"arvo-poc","ref_id":"900007-l2","bug":"arvo:900007","status":"queued"',  # 202
        r'"kind":"arvo-fix","ref_id":"900007","bug":"arvo:900007","status":"queued"',
        r"results: results/reproduce/results\.json",  # two trials, reported
    ],
}


@dataclass
class Block:
    page: str
    """The page's path in the repository (README.md, docs/api.md)."""
    line: int
    body: str
    skip: str | None
    """Why it is not run (None: it is run)."""

    @property
    def outcomes(self) -> list[str]:
        return next((v for k, v in OUTCOMES.items() if self.body.startswith(k)), [])


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """Every ```bash block of a page, with its marker."""
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(above)
        if marker is None:
            raise AssertionError(
                f"{page}:{line}: a bash block without a '<!-- readme-test: run -->' or "
                "'<!-- readme-test: skip: <reason> -->' line above it"
            )
        out.append(Block(page, line, m.group("body"), marker.group("why")))
    return out


def page_blocks(pages: list[Path]) -> list[Block]:
    """Every ```bash block of these pages, in their order."""
    return [
        block
        for page in pages
        for block in readme_blocks(page.read_text(), page.relative_to(REPO_ROOT).as_posix())
    ]


def user_folder(home: Path, token: str) -> dict[str, str]:
    """``home`` laid out as the repository after ``make demo`` (the operator token in
    ``data/compose/``, ``docs/`` for the leaderboard queries); the environment of a newcomer's
    shell there: uv on PATH (not this environment's bin: a bare ``arena`` must not work),
    ``uv run`` in this repository's environment."""
    (home / "data" / "compose").mkdir(parents=True, exist_ok=True)
    (home / "data" / "compose" / "operator-token").write_text(token + "\n")
    if not (home / "docs").exists():
        (home / "docs").symlink_to(REPO_ROOT / "docs")
    uv = Path(shutil.which("uv") or "/usr/bin/uv").parent
    return {
        "PATH": f"{uv}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "UV_PROJECT": str(REPO_ROOT),
        "UV_FROZEN": "1",
        "COLUMNS": "200",
    }


def run_blocks(home: Path, env: dict[str, str], replace: dict[str, str]) -> int:
    """Run every run block whole in ``bash -e`` from ``home``, in order (``replace``: the demo's
    addresses as this stack has them); each must exit 0 and show its :data:`OUTCOMES`. How many
    ran."""
    ran = 0
    for block in page_blocks(PAGES):
        if block.skip:
            continue
        script = block.body
        for old, new in replace.items():
            script = script.replace(old, new)
        proc = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        said = f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-3000:]}"
        assert proc.returncode == 0, (
            f"{block.page}:{block.line}: the block failed (exit {proc.returncode})\n{script}\n{said}"
        )
        for want in block.outcomes:
            assert re.search(want, proc.stdout), f"{block.page}:{block.line}: no {want!r}\n{said}"
        ran += 1
    return ran
