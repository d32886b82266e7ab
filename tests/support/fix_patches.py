"""Patches of a bundled fixture for the fix kind's tests, made from its vulnerable source: the
crashing function's body deleted, a line that does not compile, an edit of the fuzz harness.

Each is a git-style diff relative to the project root, as green takes one out of a fix task's
container.
"""

from __future__ import annotations

import difflib
import re

from fixtures.catalog import FixtureTask
from services.green.kinds.arvo.scoring.functions import list_functions

BROKEN_LINE = "int arena_does_not_compile = ;\n"
"""What the patch that does not compile adds (the compiler says: expected expression)."""


def diff(path: str, before: list[str], after: list[str]) -> str:
    body = "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", n=3))
    return f"diff --git a/{path} b/{path}\n{body}"


def _lines(task: FixtureTask, path: str) -> list[str]:
    return (task.src_dir / path).read_text().splitlines(keepends=True)


def gut_patch(task: FixtureTask) -> str:
    """The crashing function (the top in-project frame) with its body deleted: nothing but a
    return of 0 (a pointer) or -1 (any other value); a void function's body is empty."""
    lines = _lines(task, task.crash_file)
    [fn] = [
        f
        for f in list_functions("".join(lines), task.crash_file)
        if task.crash_name in (f.qualified, f.name)
    ]
    first = fn.start_line - 1
    brace = next(i for i in range(first, fn.end_line) if "{" in lines[i])
    signature = "".join(lines[first : brace + 1])
    indent = re.match(r"\s*", lines[first]).group(0) + "    "  # type: ignore[union-attr]
    if re.match(r"\s*(static\s+)?(inline\s+)?void\s+(?!\*)", signature):
        body = []
    else:
        name = task.crash_name.rsplit("::", 1)[-1]
        pointer = re.search(rf"\*\s*{re.escape(name)}\s*\(", signature)
        body = [f"{indent}return {0 if pointer else -1};\n"]
    after = lines[: brace + 1] + body + lines[fn.end_line - 1 :]
    return diff(task.crash_file, lines, after)


def broken_patch(task: FixtureTask) -> str:
    """A line that does not compile, at the top of the crashing file."""
    lines = _lines(task, task.crash_file)
    return diff(task.crash_file, lines, [BROKEN_LINE, *lines])


def harness_file(task: FixtureTask) -> str:
    [path] = [
        p.relative_to(task.src_dir).as_posix()
        for p in (task.src_dir / "fuzz").iterdir()
        if "LLVMFuzzerTestOneInput" in p.read_text()
    ]
    return path


def harness_patch(task: FixtureTask) -> str:
    """An edit of the fuzz harness (a comment line added)."""
    path = harness_file(task)
    lines = _lines(task, path)
    return diff(path, lines, [*lines, "/* the harness, edited */\n"])
