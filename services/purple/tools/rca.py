"""The root-cause-analysis tools. Every one works through a :class:`TaskEnvironment` (a shell in
green's container), and every command is recorded in :attr:`RcaTools.history`.

The docstrings are what the model reads (the registry turns them into schemas and the tool list
of the system prompt), so they are written for the model.
"""

from __future__ import annotations

import posixpath
import shlex
import uuid
from typing import Any

from pydantic import ValidationError

from services.purple.protocols import TaskEnvironment
from services.purple.signals import Submitted
from services.purple.tools.base import CommandTools, sh_text
from services.purple.tools.registry import ToolRegistry
from services.shared.loc import Location, LocJson
from services.shared.protocol import (
    RUN_POC_TEXT,
    SubmitResult,
    TaskPaths,
    result_text,
    submit_result_text,
)

SCORED_LOCATIONS = 5


class RcaTools(CommandTools):
    budget_kept_for = "; the last one is kept for writing loc.json"
    budget_advice = "Call submit_localization now."

    def __init__(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        show_file_max_lines: int = 250,
        **options: Any,
    ) -> None:
        """``options``: those of :class:`CommandTools` (``command_timeout``, ``commands``,
        ``stats``, ``max_commands`` (green's limit: the last command is kept for writing
        loc.json), ``search_max_matches``, ``line_width``)."""
        super().__init__(env, paths, show_file_max_lines=show_file_max_lines, **options)
        self.submissions: list[tuple[LocJson, SubmitResult]] = []

    def registry(self) -> ToolRegistry:
        """The tools; ``run_poc`` where the task offers it."""
        poc = [self.run_poc] if RUN_POC_TEXT in self.offers else []
        return ToolRegistry(
            [self.run_bash_cmd, self.show_file, self.search_code, *poc, self.submit_localization]
        )

    # ---- the tools ---------------------------------------------------------------------------

    async def run_bash_cmd(self, command: str) -> str:
        """Run a shell command (bash) in the task container and return its exit code and output.

        The working directory is the workspace: error.txt (the sanitizer report) and src-vul/
        (the vulnerable source) are there. Long outputs are cut in the middle, so prefer
        targeted commands (grep -n, sed -n 'A,Bp', head). Do not start interactive programs.

        Args:
            command: The command line, e.g. "grep -rn 'foo(' src-vul --include=*.c | head".
        """
        return await self._run_bash(command)

    async def run_poc(self) -> str:
        """Run the vulnerable fuzz target on the task's crashing input (the PoC) and return its
        exit code and output (the sanitizer report of the crash).

        Green runs it in a fresh container of its own (the fuzz target is not in yours); each
        call counts as a command.
        """
        if exhausted := self.budget_exhausted():
            return exhausted
        return result_text(await self._run_poc())

    async def show_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Show a range of a source file with line numbers.

        Args:
            path: The file: relative to src-vul/ or to the project folder in it, a path from
                the stack trace such as /src/<project>/lib/x.c, or an absolute path.
            start_line: First line to show (1-based).
            end_line: Last line to show (inclusive); default: start_line + 249.
        """
        src = self.paths.source_dir.rstrip("/")

        def script(start: int, end: int) -> str:
            return (
                f"( {self._find_file(path)}\n"
                f'if [ -z "$f" ]; then echo "File not found: {sh_text(path)} (looked under {src})"; false; '
                f"else {self._numbered(str(start), str(end), f'${{f#{src}/}}')}; fi )"
            )

        return await self._show_range(path, start_line, end_line, script)

    async def search_code(self, pattern: str, file_pattern: str = "*.c", path: str = "") -> str:
        """Search the source for an extended regular expression (grep -rnE); prints file:line:text.

        Args:
            pattern: Extended regex, e.g. "ass_shaper_new|shaper->ctx". Quote nothing: it is
                passed to grep as is.
            file_pattern: File name glob(s) to search, comma-separated, e.g. "*.c,*.h" or
                "*.cc,*.cpp,*.h"; "*" searches every file.
            path: File or folder to search, relative to src-vul/ (default: all of src-vul/).
        """
        src = self.paths.source_dir.rstrip("/")
        return await self._grep(
            pattern,
            file_pattern,
            self._map_path(path) if path.strip() else src,
            tool=f"search_code {pattern!r} in {file_pattern!r} under {path or 'src-vul'}",
            awk_options=f" -v p={shlex.quote(src + '/')}",
            awk_rewrite="if (index($0, p) == 1) $0 = substr($0, length(p) + 1);",
        )

    async def submit_localization(self, locations: list[Location], reasoning: str) -> str:
        """Submit your answer: the code locations of the root cause, most likely first.

        This writes /workspace/shared/loc.json and asks the judge to check it. If it is
        refused you get the errors and can call this tool again. Only the first 5 locations
        are scored; a location scores at line level when its span (at most 50 lines) holds a
        line that the real fix changes, so keep spans tight.

        Args:
            locations: Ranked list of objects {"file": path relative to the project root
                (e.g. "lib/parser.c"), "function": enclosing function name, "line_start": int,
                "line_end": int (inclusive), "description": why this location}.
            reasoning: Your root-cause explanation: what goes wrong, where, and why.
        """
        try:
            loc = LocJson(reasoning=reasoning, locations=locations)
        except ValidationError as exc:
            problems = "\n".join(
                f"- {'.'.join(str(p) for p in e['loc']) or 'submission'}: {e['msg']}"
                for e in exc.errors()
            )
            return f"Submission not written; fix these problems first:\n{problems}"
        written = await self.write_submission(loc)
        if written is not None:
            return written
        reply = await self.env.submit(self.stats() if self.stats else None)
        self.submissions.append((loc, reply))
        if reply.accepted:
            raise Submitted(submission=loc)
        return submit_result_text(reply) + "\nFix the problems and call submit_localization again."

    async def write_submission(self, loc: LocJson) -> str | None:
        """Write loc.json through a command (a quoted heredoc survives any content).
        Returns None on success, else an observation describing the failure."""
        target = self.paths.submission
        delim = f"LOC_JSON_{uuid.uuid4().hex}"
        body = loc.model_dump_json(indent=2)
        cmd = (
            f"mkdir -p {shlex.quote(posixpath.dirname(target))} && "
            f"cat > {shlex.quote(target)} <<'{delim}'\n{body}\n{delim}"
        )
        result = await self.execute(cmd, tool=f"write {target} ({len(loc.locations)} locations)")
        if result.exit_code != 0:
            return f"Could not write {target}:\n{result_text(result)}"
        return None

    # ---- paths -------------------------------------------------------------------------------

    def _map_path(self, path: str) -> str:
        """``/src/<project>/x`` -> ``<source_dir>/<project>/x``; relative -> under source_dir."""
        p = path.strip()
        src = self.paths.source_dir.rstrip("/")
        if p.startswith("/src/"):
            return src + p[len("/src") :]
        if p.startswith("/"):
            return p
        p = p.removeprefix("./")
        for prefix in ("src-vul/", "workspace/src-vul/"):
            if p.startswith(prefix):
                return f"{src}/{p[len(prefix) :]}"
        return f"{src}/{p}"

    def _find_file(self, path: str) -> str:
        """Shell that sets ``f`` to the first existing candidate for ``path`` (or empty)."""
        mapped = self._map_path(path)
        src = self.paths.source_dir.rstrip("/")
        candidates = [shlex.quote(mapped)]
        if not path.strip().startswith("/"):
            rel = shlex.quote(path.strip().removeprefix("./"))
            ws = shlex.quote(self.paths.workspace.rstrip("/"))
            candidates += [f"{ws}/{rel}", f"{shlex.quote(src)}/*/{rel}"]
        return (
            f"f=''; for c in {' '.join(candidates)}; do "
            'if [ -f "$c" ]; then f="$c"; break; fi; done'
        )
