"""The description of a fix task: what an LLM agent (or a person) reads first."""

from __future__ import annotations

from services.green.kinds.arvo.prompt import how_to_act
from services.shared.protocol import TaskAssignment


def describe_fix_task(
    task: TaskAssignment, *, source: str, project: str | None, arvo_id: str | None = None
) -> str:
    """``arvo_id`` is named only when green does not mask it (GREEN_MASK_ARVO_ID=false)."""
    p = task.paths
    build_dir = f"/src/{project}" if project else "/src/<project>"
    named = f"\n(ARVO task arvo:{arvo_id})\n" if arvo_id else ""
    return f"""# Vulnerability fixing task {task.task_id}
{named}
A fuzzer crashed a C/C++ project. FIX the bug: change the project's source code so that the
crashing input no longer crashes it, and everything else behaves as before.

## What you have (inside a sandbox container, no network)
- The sanitizer report of the crash: `{p.error_report}` (paths in it look like
  `/src/{project or "<project>"}/...`; they are the same files under `{source}/`)
- The vulnerable source tree, which you edit in place: `{source}` (where the sandbox has
  `git`, a git repository of the pristine tree: `git diff` shows your changes so far)
- To try a change: `cp -r {source}/. {build_dir}/ && arvo compile` builds the project and its
  fuzz target (in `/out/`) from your tree; run the fuzz target on an input file to test it

## The answer: your changes to `{source}`
At `submit` green compares `{source}` with the pristine tree itself (your git configuration and
repository play no part) and takes the difference as your patch. The judge applies it to the
pristine tree in a fresh container, builds it with `arvo compile`, runs the crashing input (it
must not crash), runs other inputs (they must behave as with the developers' own fix) and fuzzes
the patched build for a while (no new crash).
- Change the project's code only: a patch that changes tests, the fuzz harness (`fuzz/`,
  `*fuzz*`) or build scripts (Makefile, CMakeLists.txt, configure, build.sh, ...) is refused.
- Fix the root cause with a small, focused change; do not delete functionality to make the crash
  go away (other inputs must still give the same results).
- Build products (`*.o`, `*.a`, ...) are left out; binary files and links are refused.
- Code that changes how the sanitizer or the process runs is refused: sanitizer interface
  functions and options (`__asan_*`, `*_default_options`), `no_sanitize` attributes,
  constructors and destructors, `#pragma`s, inline assembly, `_exit` and the like.

{how_to_act(task, f"asks the judge to take your changes to `{source}` as your patch")}"""
