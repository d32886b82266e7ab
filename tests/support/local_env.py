"""A :class:`~services.purple.protocols.TaskEnvironment` that runs commands in a local
temp-dir workspace laid out like a task container's (error.txt, src-vul/<project>/, shared/).

Commands run with ``bash -c`` in their own process group, so a timeout kills the whole group;
output is capped by green's own :class:`~services.sandbox.output.OutputCapture` (head +
tail, with a line saying how much was cut). ``submit`` validates loc.json like green would and
can be told to refuse the first submissions.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from services.purple.protocols import RunStats
from services.sandbox.output import OutputCapture
from services.shared.commands import CommandResult
from services.shared.loc import LocJson, parse_loc_json
from services.shared.protocol import SubmitResult, TaskPaths


def make_workspace(
    root: Path,
    *,
    project: str = "demo",
    files: dict[str, str] | None = None,
    error_txt: str | bytes = "",
) -> TaskPaths:
    """Create ``root/{error.txt, src-vul/<project>/<files>, shared/}`` and return its paths."""
    (root / "shared").mkdir(parents=True, exist_ok=True)
    src = root / "src-vul" / project
    src.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    data = error_txt.encode() if isinstance(error_txt, str) else error_txt
    (root / "error.txt").write_bytes(data)
    return TaskPaths(
        workspace=str(root),
        source_dir=str(root / "src-vul"),
        error_report=str(root / "error.txt"),
        submission=str(root / "shared" / "loc.json"),
    )


@dataclass
class LocalShellEnvironment:
    paths: TaskPaths
    output_limit: int = 64 * 1024
    default_timeout: float = 30.0
    refuse_first: int = 0
    """Refuse this many submissions (with a made-up error) before judging for real."""
    commands: list[str] = field(default_factory=list)
    submits: list[tuple[RunStats | None, SubmitResult]] = field(default_factory=list)
    accepted: LocJson | None = None

    async def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        self.commands.append(command)
        start = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=self.paths.workspace,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout or self.default_timeout)
        except TimeoutError:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = await proc.communicate()
        capture = OutputCapture(self.output_limit)
        capture.feed(out)
        return CommandResult(
            exit_code=-1 if timed_out else (proc.returncode or 0),
            output=capture.text(),
            truncated=capture.bytes_cut > 0,
            bytes_cut=capture.bytes_cut,
            timed_out=timed_out,
            duration_s=time.monotonic() - start,
        )

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        path = Path(self.paths.submission)
        if not path.exists():
            reply = SubmitResult(accepted=False, errors=[f"{path} does not exist"])
        elif len(self.submits) < self.refuse_first:
            reply = SubmitResult(
                accepted=False, errors=["locations.0.file: no such file (test refusal)"]
            )
        else:
            loc, errors = parse_loc_json(path.read_bytes())
            reply = SubmitResult(accepted=loc is not None, errors=errors)
            self.accepted = loc
        self.submits.append((stats, reply))
        return reply
