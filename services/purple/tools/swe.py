"""The issue-fixing tools (SWE-bench mode). Every one works through a :class:`TaskEnvironment`
(a shell whose working directory is the repository, ``/testbed`` in SWE-bench images), and
every command is recorded in :attr:`SweTools.history`.

The tools only edit files; the runner extracts the patch (``git diff``) after :meth:`finish`.
The docstrings are what the model reads (the registry turns them into schemas and the tool
list of the system prompt), so they are written for the model.
"""

from __future__ import annotations

import base64
import re
import shlex
import uuid
from typing import Any

from services.purple.protocols import TaskEnvironment
from services.purple.signals import Submitted
from services.purple.tools.base import CommandTools, output_text, sh_text
from services.purple.tools.registry import ToolRegistry
from services.shared.protocol import TaskPaths, submit_result_text

TEST_PATH_RE = (
    r"(^|/)(tests?|testing)/.*\.py$|(^|/)test_[^/]*\.py$|(^|/)[^/]*_tests?\.py$|(^|/)conftest\.py$"
)
"""What counts as a test file (extended regex over repository-relative paths)."""


class Finished(Submitted):
    """The agent called ``finish`` and the environment accepted it (``submit``): the run ends;
    the runner (or green) extracts the patch.

    A :class:`Submitted` without a ``loc.json`` (``submission`` is None); the summary is kept.
    """

    def __init__(self, summary: str) -> None:
        super().__init__(f"finished: {_one_line(summary, 200)}")
        self.summary = summary


class SweTools(CommandTools):
    budget_advice = "Call finish now: your changes so far are the patch."

    def __init__(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        show_file_max_lines: int = 200,
        list_max_files: int = 60,
        context_lines: int = 4,
        **options: Any,
    ) -> None:
        """``options``: those of :class:`CommandTools` (``command_timeout``, ``on_command``,
        ``stats``, ``max_commands`` (the last command is kept for finish),
        ``search_max_matches``, ``line_width``)."""
        super().__init__(env, paths, show_file_max_lines=show_file_max_lines, **options)
        self.list_max_files = list_max_files
        self.context_lines = context_lines
        """Lines shown around an edit, before and after it."""
        self.finish_warned = False
        """finish was refused once because nothing was changed (a second call ends anyway)."""

    def registry(self) -> ToolRegistry:
        return ToolRegistry(
            [
                self.run_bash_cmd,
                self.show_file,
                self.replace_in_file,
                self.search_code,
                self.find_test_files,
                self.finish,
            ]
        )

    # ---- the tools ---------------------------------------------------------------------------

    async def run_bash_cmd(self, command: str) -> str:
        """Run a shell command (bash) in the repository and return its exit code and output.

        Every command starts in the repository root (a `cd` does not carry over to the next
        command; chain with `&&`). Long outputs are cut in the middle, so prefer targeted
        commands (grep -n, sed -n 'A,Bp', head, python -m pytest -x -q path::test). Do not
        start interactive programs or servers; there is no network.

        Args:
            command: The command line, e.g. "python -m pytest -q tests/test_parser.py -x".
        """
        return await self._run_bash(command)

    async def show_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Show a range of a file with line numbers (use them with replace_in_file).

        Args:
            path: The file, relative to the repository root (or absolute).
            start_line: First line to show (1-based).
            end_line: Last line to show (inclusive); default: start_line + 199.
        """

        def script(start: int, end: int) -> str:
            return (
                f"f={shlex.quote(path)}; "
                'if [ ! -f "$f" ]; then echo "File not found (or not a regular file): $f"; exit 1; fi; '
                + self._numbered(str(start), str(end))
            )

        return await self._show_range(path, start_line, end_line, script)

    async def replace_in_file(self, path: str, from_line: int, to_line: int, content: str) -> str:
        """Replace lines from_line..to_line (inclusive, 1-based) of a file with new text.

        The text replaces the whole lines, so give it with its full indentation; it may have
        more or fewer lines than it replaces. To insert without removing, use
        to_line = from_line - 1 (e.g. from_line=5, to_line=4 inserts before line 5; from_line =
        last line + 1 appends). Empty content deletes the lines. A new file is created with
        from_line=1, to_line=0. Line numbers shift after an edit: the numbered lines around the
        edit are shown back, use them (or show_file) before the next edit.

        Args:
            path: The file, relative to the repository root (or absolute).
            from_line: First line to replace (1-based).
            to_line: Last line to replace (inclusive); from_line - 1 to insert only.
            content: The new lines (any characters; a final newline is added if missing).
        """
        if exhausted := self.budget_exhausted():
            return exhausted
        if from_line < 1:
            return f"from_line must be at least 1 (got {from_line})."
        if to_line < from_line - 1:
            return (
                f"to_line ({to_line}) is before from_line ({from_line}); use to_line = "
                f"{from_line - 1} to insert before line {from_line} without replacing anything."
            )
        if content and not content.endswith("\n"):
            content += "\n"
        added = content.count("\n")
        delim = f"SWE_CONTENT_{uuid.uuid4().hex}"
        encoded = base64.b64encode(content.encode()).decode()
        body = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
        lo = max(1, from_line - self.context_lines)
        hi = from_line + max(added, 1) - 1 + self.context_lines
        f, s, e = shlex.quote(path), from_line, to_line
        if to_line < from_line:
            done = f"Inserted {added} line(s) before line {from_line} of {path}."
        else:
            done = f"Replaced lines {from_line}-{to_line} of {path} with {added} line(s)."
        script = f"""f={f}
if [ ! -e "$f" ]; then
  if [ {s} -eq 1 ] && [ {e} -eq 0 ]; then mkdir -p -- "$(dirname -- "$f")" && : > "$f" || exit 1
  else echo "File not found: $f (to create a file use from_line=1, to_line=0)"; exit 1; fi
fi
if [ ! -f "$f" ]; then echo "Not a regular file: $f"; exit 1; fi
n=$(awk 'END {{print NR}}' "$f")
if [ {s} -gt $((n + 1)) ]; then echo "from_line ({s}) is past the end of $f ($n lines)"; exit 1; fi
if [ {e} -gt "$n" ]; then echo "to_line ({e}) is past the end of $f ($n lines)"; exit 1; fi
c=$(mktemp) && t=$(mktemp) || exit 1
base64 -d > "$c" <<'{delim}'
{body}
{delim}
head -n {s - 1} "$f" > "$t"
if [ -s "$t" ] && [ -n "$(tail -c 1 "$t")" ]; then echo >> "$t"; fi
cat "$c" >> "$t" && tail -n +{e + 1} "$f" >> "$t" && cat "$t" > "$f"
rc=$?; rm -f "$c" "$t"; [ $rc -eq 0 ] || exit $rc
echo {shlex.quote(done)}
{self._numbered(str(lo), str(hi))}
{self._syntax_check()}"""
        tool = f"replace_in_file {path} {from_line}-{to_line} ({added} lines)"
        return output_text(await self.execute(script, tool=tool))

    async def search_code(self, pattern: str, file_pattern: str = "*.py", path: str = ".") -> str:
        """Search the repository for an extended regular expression (grep -rnE); prints
        file:line:text (the .git folder is skipped).

        Args:
            pattern: Extended regex, e.g. "def parse_line|class Parser". Quote nothing: it is
                passed to grep as is.
            file_pattern: File name glob(s), comma-separated, e.g. "*.py" or "*.py,*.cfg";
                "*" searches every file.
            path: File or folder to search, relative to the repository root.
        """
        target = path.strip() or "."
        return await self._grep(
            pattern,
            file_pattern,
            target,
            tool=f"search_code {pattern!r} in {file_pattern!r} under {target}",
            grep_options="--exclude-dir=.git ",
            awk_rewrite='sub(/^\\.\\//, "");',
        )

    async def find_test_files(self, name_or_module: str = "") -> str:
        """List the repository's test files, or those related to a name: test files whose path
        contains it, and test files that mention it.

        Args:
            name_or_module: A module, file, class or function name, e.g. "parser",
                "semver.version", "src/pkg/wrap.py" or "TextWrapper"; empty lists all test
                files.
        """
        if exhausted := self.budget_exhausted():
            return exhausted
        key = _search_key(name_or_module)
        cap = self.list_max_files
        listing = (
            "{ git ls-files --cached --others --exclude-standard 2>/dev/null "
            "|| find . -type f -not -path './.git/*' | sed 's|^\\./||'; } | "
            f'grep -E {shlex.quote(TEST_PATH_RE)} | sort -u > "$t"'
        )
        if not key:
            report = (
                'n=$(wc -l < "$t"); if [ "$n" -eq 0 ]; then echo "No test files found."; '
                f'else echo "$n test file(s):"; head -n {cap} "$t"; '
                f'[ "$n" -gt {cap} ] && echo "[... $((n - {cap})) more]"; fi'
            )
        else:
            q = shlex.quote(key)
            report = (
                f'grep -iF -- {q} "$t" > "$t.p"; '
                f'tr "\\n" "\\0" < "$t" | xargs -0 -r grep -l -i -w -F -- {q} 2>/dev/null '
                f'| grep -vxF -f "$t.p" > "$t.m"; '
                f'n=$(wc -l < "$t.p"); m=$(wc -l < "$t.m"); '
                f'echo "Test files whose path contains {sh_text(key)!s}: $n"; head -n {cap} "$t.p"; '
                f'echo "Other test files that mention {sh_text(key)!s}: $m"; head -n {cap} "$t.m"; '
                f'rm -f "$t.p" "$t.m"'
            )
        cmd = f't=$(mktemp) || exit 1; {listing}; {report}; rm -f "$t"'
        return output_text(await self.execute(cmd, tool=f"find_test_files {name_or_module!r}"))

    async def finish(self, summary: str) -> str:
        """End the task: your changes to the repository (as they are now) are the fix.

        Call it once the issue is fixed and checked. Do not revert your source changes
        before; delete scratch files you created inside the repository (every file there
        is part of the patch).

        Args:
            summary: What was wrong and what you changed, in a few sentences.
        """
        if not self.finish_warned:
            result = await self.execute(
                "git status --porcelain --untracked-files=no 2>/dev/null | head -n 20",
                tool="finish (git status)",
            )
            if result.exit_code == 0 and not result.output.strip():
                self.finish_warned = True
                return (
                    "No tracked file is changed: the patch would be empty. Fix the issue "
                    "first (replace_in_file), or call finish again to end without a fix."
                )
        reply = await self.env.submit(self.stats() if self.stats else None)
        if not reply.accepted:  # e.g. green's deadline passed, or it wants something first
            return submit_result_text(reply) + "\nFix the problems and call finish again."
        raise Finished(summary)

    # ---- shell pieces ------------------------------------------------------------------------

    @staticmethod
    def _syntax_check() -> str:
        """Shell warning when an edited .py file no longer parses (``$f`` set)."""
        return (
            'case "$f" in *.py) py=$(command -v python3 || command -v python); '
            'w="${TMPDIR:-/tmp}/.swe_syntax.$$"; '
            'if [ -n "$py" ] && ! "$py" -c '
            "\"import ast, sys; ast.parse(open(sys.argv[1], 'rb').read(), sys.argv[1])\" "
            '"$f" > /dev/null 2> "$w"; then echo "WARNING: $f no longer parses:"; '
            'tail -n 4 "$w"; fi; rm -f "$w";; esac; true'
        )


def _search_key(name: str) -> str:
    """``semver.version`` -> ``version``, ``src/pkg/wrap.py`` -> ``wrap``, ``A.b`` -> ``b``."""
    parts = [p for p in re.split(r"[\s./:\\]+", name.strip().removesuffix(".py")) if p]
    parts = [p for p in parts if p.lower() not in ("py", "test", "tests")]
    return parts[-1] if parts else ""


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
