"""``run_poc`` for a locate task whose condition offers it: the vulnerable target on the task's
own PoC, in a fresh judging container of green's (never the agent's), with the task's limits.

What the agent gets back is a command result: ``arvo``'s exit status and the target's sanitizer
output (stderr), as the reproduce kind frames a run (:mod:`.builds.runs`). Where the condition
withholds the PoC file, the answer carries nothing of the input: libFuzzer's lines that print
it (``Base64:``, its bytes, ``Test unit written to crash-<sha1>``) and any hash of it are
withheld (:func:`~.poc.levels.withhold_input`), and the target's stdout (a harness may echo
what it read) is not shown.
"""

from __future__ import annotations

import time

from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.conditions import Condition
from services.green.kinds.arvo.poc.levels import withhold_input
from services.shared.commands import CommandResult

STDOUT_NOT_SHOWN = "[the target's stdout is not shown: it could carry the input]"


class PocRunner:
    """Runs one task's PoC on its vulnerable build, one fresh container per request."""

    def __init__(self, builds: TaskBuilds, poc: bytes, condition: Condition) -> None:
        self.builds, self.poc, self.condition = builds, poc, condition

    async def run(self, task_id: str) -> CommandResult:
        started = time.monotonic()
        async with self.builds.vulnerable(task_id, build="run_poc") as box:
            run = await box.run(self.poc, "poc")
        return CommandResult(
            exit_code=run.exit_code,
            output=self.shown(run),
            timed_out=run.timed_out,
            duration_s=time.monotonic() - started,
        )

    def shown(self, run: InputRun) -> str:
        """What the agent reads of a run: a verdict line, the target's stdout where the file is
        the agent's anyway, and its stderr (the sanitizer report)."""
        head = f"[run_poc: the vulnerable build on the task's PoC: {run.verdict()}]"
        if self.condition.poc_file:
            stdout = f"--- stdout ---\n{run.stdout}" if run.stdout else ""
            return "\n".join(p for p in (head, stdout, f"--- stderr ---\n{run.output}") if p)
        return "\n".join(
            (head, STDOUT_NOT_SHOWN, f"--- stderr ---\n{withhold_input(run.output, self.poc)}")
        )
