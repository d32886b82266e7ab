"""The prompts: role, root-cause-analysis method, tools, and (text mode) the call format."""

from __future__ import annotations

from services.purple.agent.parser import FORMAT_HELP
from services.shared.protocol import TaskPaths

ROLE_AND_METHOD = """\
You are an expert security engineer. A fuzzer crashed a C/C++ project; your job is to find the \
ROOT CAUSE: the code that has to change to fix the bug, which is often not where it crashed. \
You work in a sandbox through the tools below, then answer with ranked code locations.

## Where things are
- {error_report}: the sanitizer report of the crashing run.
- {source_dir}/<project>/: the vulnerable source tree. A stack frame /src/<project>/lib/x.c:120 \
is {source_dir}/<project>/lib/x.c line 120; in your answer write "lib/x.c" (relative to the \
project root).

## Method
1. Read the report: the bug type (heap-buffer-overflow, use-after-free, double-free, \
use-of-uninitialized-value, undefined behaviour, ...), READ/WRITE and size, the crash stack, and \
the "freed by", "allocated by" or "created by" stacks. Skip sanitizer, libc and fuzzing-harness \
frames (LLVMFuzzerTestOneInput and below).
2. Read the crash site, then walk up the callers. Ask which invariant broke (a bound, a length, \
an index, an object's lifetime, an initialization) and where it should have been enforced.
3. Typical root causes: a missing or wrong bounds/length check in the crashing function or a \
caller; a size computed wrongly (or overflowing) where the buffer was allocated; an object freed \
while still referenced; a value never initialized on some path; an unchecked return value.
4. Confirm with the code before answering. Do not build or run the program, and do not look for \
the fix in version-control history.
5. Submit with submit_localization: up to 5 locations, most likely first, each a tight span \
(a few lines, at most 50) around the lines the fix would change, with the enclosing function. \
Submit before you run out of steps: an answer never submitted scores nothing.
{budget}
## Tools
{tools}
"""

NATIVE_FORMAT = """
## How to act
Each reply: think briefly, then call exactly one tool. You get its output back, then decide the \
next step.
"""

TEXT_FORMAT = f"""
## How to act
Each reply: think briefly, then write exactly one function call in this format (it is run and \
its output comes back to you as "Observation: ..."). Non-string argument values (numbers, \
lists) are written as JSON.

{FORMAT_HELP}
"""

TASK_NOTE = (
    "\n\n(Work with the tools described in the system prompt. submit_localization writes "
    "loc.json and submits it for you.)"
)


def system_prompt(
    paths: TaskPaths,
    tools: str,
    *,
    mode: str,
    step_limit: int | None,
    command_limit: int | None = None,
    base: str | None = None,
) -> str:
    return compose_system_prompt(
        ROLE_AND_METHOD,
        tools,
        mode=mode,
        step_limit=step_limit,
        command_limit=command_limit,
        base=base,
        error_report=paths.error_report,
        source_dir=paths.source_dir,
    )


def compose_system_prompt(
    role_and_method: str,
    tools: str,
    *,
    mode: str,
    step_limit: int | None,
    command_limit: int | None,
    base: str | None,
    **fields: str,
) -> str:
    """A toolset's role text (``{tools}``, ``{budget}`` and ``fields`` filled in), or a custom
    ``base`` used verbatim with the budget and tools appended; then the response format."""
    limits = [f"{step_limit} steps (one tool call each)"] if step_limit else []
    if command_limit:
        limits.append(f"{command_limit} commands (every tool runs one)")
    budget = f"\nYou have at most {' and '.join(limits)} for the whole task.\n" if limits else ""
    if base is not None:
        text = f"{base.rstrip()}\n{budget}\n## Tools\n{tools}\n"
    else:
        text = role_and_method.format(tools=tools, budget=budget, **fields)
    return text + (TEXT_FORMAT if mode == "text" else NATIVE_FORMAT)


def task_message(description: str) -> str:
    return description.rstrip() + TASK_NOTE
