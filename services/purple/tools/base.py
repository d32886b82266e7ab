"""What the tool sets share (:class:`~services.purple.tools.rca.RcaTools`,
:class:`~services.purple.tools.swe.SweTools`): the environment, the recorded command history,
the command budget, and the shell plumbing of ``run_bash_cmd``, ``show_file`` and
``search_code``.

The tools themselves (the methods the registry lists) stay in the subclasses: their docstrings
are what the model reads.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

from services.purple.commands import CommandLog, CommandRecord
from services.purple.protocols import RunsPoc, RunStats, TaskEnvironment
from services.shared import telemetry
from services.shared.commands import CommandResult
from services.shared.protocol import RUN_POC_TEXT, TaskPaths, result_text


class CommandTools:
    """Tools that work through a :class:`TaskEnvironment`, every command recorded once in
    :attr:`commands` (its :attr:`history` is the run's)."""

    budget_kept_for = ""
    """What the last command of the budget is kept for, told when the budget runs out
    (e.g. "; the last one is kept for writing loc.json")."""
    budget_advice = ""
    """What to do once the budget is used up (the final tool), e.g. "Call finish now."."""

    def __init__(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        command_timeout: float | None = None,
        commands: CommandLog | None = None,
        stats: Callable[[], RunStats] | None = None,
        max_commands: int | None = None,
        show_file_max_lines: int,
        search_max_matches: int = 80,
        line_width: int = 300,
        offers: tuple[str, ...] = (),
    ) -> None:
        self.env = env
        self.offers = offers
        """The requests beyond execute and submit the task serves (``run_poc``)."""
        self.paths = paths
        self.command_timeout = command_timeout
        """Timeout sent with each command (the loop or policy lowers it as the deadline nears)."""
        self.commands = commands if commands is not None else CommandLog()
        """The run's command log (the policy's trajectory hangs on it)."""
        self.stats = stats
        self.max_commands = max_commands
        """Most commands for the run (None: no limit); the last one is kept for the final tool."""
        self.show_file_max_lines = show_file_max_lines
        self.search_max_matches = search_max_matches
        self.line_width = line_width
        self.turn = 0
        """Set by the loop or policy before each turn; recorded with every command."""
        self.tool_call: tuple[str, str | None] | None = None
        """The model's tool call being served, (tool name, call id), set by the loop before
        each call; it names the trace's ``execute_tool`` span of each command the call runs."""
        self.budget_refusals = 0
        """Tool calls refused because only the final tool's command was left."""

    async def execute(
        self, command: str, timeout: float | None = None, *, tool: str | None = None
    ) -> CommandResult:
        """Run a command through the environment and record it (``tool``: a short label)."""
        start = time.monotonic()
        with self._traced("execute", command) as span:
            result = await self.env.execute(command, timeout=timeout or self.command_timeout)
            span.command(
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                truncated=result.truncated,
                output=result.output,
            )
        return self._recorded(command, tool, start, result)

    async def _run_poc(self) -> CommandResult:
        """``run_poc``: green runs the task's PoC (where offered), recorded as a command."""
        if not isinstance(self.env, RunsPoc):
            return CommandResult(exit_code=-1, output="this environment cannot run the PoC")
        start = time.monotonic()
        with self._traced(RUN_POC_TEXT, RUN_POC_TEXT) as span:
            result = await self.env.run_poc()
            span.command(
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                truncated=result.truncated,
                output=result.output,
            )
        return self._recorded(RUN_POC_TEXT, RUN_POC_TEXT, start, result)

    def _traced(self, request: str, command: str) -> Any:
        """A command's ``execute_tool`` span (nothing when tracing is off), named for the
        model's tool call it serves, else for the request sent to green (``request``)."""
        name, call_id = self.tool_call or (request, None)
        return telemetry.tool(name, call_id, command)

    def _recorded(
        self, command: str, tool: str | None, start: float, result: CommandResult
    ) -> CommandResult:
        record = CommandRecord(
            step=self.turn,
            command=command,
            tool=tool,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            truncated=result.truncated,
            duration_s=result.duration_s or (time.monotonic() - start),
            output_chars=len(result.output),
        )
        self.commands.record(record, result)
        return result

    @property
    def history(self) -> list[CommandRecord]:
        """Every command run so far, in order (never compacted away)."""
        return self.commands.history

    def budget_exhausted(self) -> str | None:
        """An observation when only the final tool's command is left, else None."""
        if self.max_commands is None or len(self.history) < self.max_commands - 1:
            return None
        self.budget_refusals += 1
        return (
            f"Command budget exhausted ({len(self.history)} of {self.max_commands} used"
            f"{self.budget_kept_for}). {self.budget_advice}"
        )

    # ---- plumbing of the tools ---------------------------------------------------------------

    async def _run_bash(self, command: str) -> str:
        """``run_bash_cmd``: the command as it is, its exit code and output."""
        if not command.strip():
            return "Empty command: give a shell command to run."
        if exhausted := self.budget_exhausted():
            return exhausted
        return result_text(await self.execute(command))

    async def _show_range(
        self,
        path: str,
        start_line: int,
        end_line: int | None,
        script: Callable[[int, int], str],
    ) -> str:
        """``show_file``: clamp the range to :attr:`show_file_max_lines`, run ``script(start,
        end)`` (shell printing those lines) and add a note when the range was cut."""
        if exhausted := self.budget_exhausted():
            return exhausted
        start = max(1, start_line)
        end = end_line if end_line is not None else start + self.show_file_max_lines - 1
        if end < start:
            return f"end_line ({end}) is before start_line ({start})."
        note = ""
        if end - start + 1 > self.show_file_max_lines:
            end = start + self.show_file_max_lines - 1
            note = f"[showing at most {self.show_file_max_lines} lines; ask for the next range if needed]"
        result = await self.execute(script(start, end), tool=f"show_file {path} {start}-{end}")
        text = output_text(result)
        return f"{text.rstrip()}\n{note}" if note else text

    def _numbered(self, start: str, end: str, name: str = "$f") -> str:
        """Shell printing ``[<name>: lines A-B of N]`` (or ``[<name> is empty]``) and lines
        ``start``..``end`` of ``$f`` numbered, cut at :attr:`line_width` (``start``, ``end``:
        shell words; ``name``: how the header calls the file, expanded in double quotes)."""
        return (
            f"n=$(awk 'END {{print NR}}' \"$f\"); s={start}; e={end}; "
            'if [ "$e" -gt "$n" ]; then e=$n; fi; '
            f'if [ "$n" -eq 0 ]; then echo "[{name} is empty]"; '
            f'else echo "[{name}: lines $s-$e of $n]"; '
            f'awk -v s="$s" -v e="$e" -v w={self.line_width} '
            '\'NR>=s {printf "%6d  %s\\n", NR, substr($0,1,w)} NR>=e {exit}\' "$f"; fi'
        )

    async def _grep(
        self,
        pattern: str,
        file_pattern: str,
        target: str,
        *,
        tool: str,
        grep_options: str = "",
        awk_options: str = "",
        awk_rewrite: str = "",
    ) -> str:
        """``search_code``: ``grep -rnIE`` for ``pattern`` in the files matching
        ``file_pattern`` under ``target``, at most :attr:`search_max_matches` lines shown.

        ``grep_options`` (ending in a space) go before the includes; ``awk_options`` (starting
        with a space) and ``awk_rewrite`` (an awk statement run on each line first) tidy the
        output."""
        if exhausted := self.budget_exhausted():
            return exhausted
        globs = [g.strip() for g in file_pattern.replace(" ", ",").split(",") if g.strip()]
        includes = (
            "" if globs in ([], ["*"]) else " ".join(f"--include={shlex.quote(g)}" for g in globs)
        )
        cmd = (
            f"grep -rnIE {grep_options}{includes} -e {shlex.quote(pattern)} -- "
            f"{shlex.quote(target)} 2>&1 | "
            f"awk -v max={self.search_max_matches}{awk_options} -v w={self.line_width} "
            f"'{{ {awk_rewrite} if (NR <= max) print substr($0, 1, w) }} "
            'END { if (NR == 0) print "No matches."; '
            'else if (NR > max) print "[" NR - max " more matches not shown; narrow the pattern or the path]" }\''
        )
        return output_text(await self.execute(cmd, tool=tool))


def output_text(result: CommandResult) -> str:
    """The output alone when the command succeeded, else with its exit code (``result_text``)."""
    return result.output if result.exit_code == 0 else result_text(result)


def sh_text(text: str) -> str:
    """Text safe inside a double-quoted shell string."""
    return "".join(c for c in text if c not in '"$`\\')[:200]
