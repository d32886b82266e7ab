"""The task description green sends to purple: what an LLM (or a person) reads first."""

from __future__ import annotations

from services.green.kinds.arvo.conditions import PLAIN, Condition
from services.shared.protocol import RCA_PATHS, TaskAssignment

RUN_POC = """- `run_poc` (no argument) asks green to run the vulnerable fuzz target on the crashing input,
  in a fresh container of green's own, and answers like `execute` (the run's exit status and
  its sanitizer output); it counts as a command.
"""

LOC_JSON_EXAMPLE = """{
  "reasoning": "why these locations are the root cause",
  "locations": [
    {"file": "src/decoder.c", "function": "read_chunk",
     "line_start": 120, "line_end": 126, "description": "length is not checked against the buffer"}
  ]
}"""


def describe_task(
    task: TaskAssignment,
    project: str | None,
    arvo_id: str | None = None,
    *,
    condition: Condition = PLAIN,
) -> str:
    """``arvo_id`` is named only when green does not mask it (GREEN_MASK_ARVO_ID=false);
    ``condition``: what the task grants (:mod:`.conditions`), and says it grants."""
    p = task.paths
    src = f"{RCA_PATHS.source_dir}/{project}" if project else RCA_PATHS.source_dir
    named = f"\n(ARVO task arvo:{arvo_id})\n" if arvo_id else ""
    have = []
    if condition.report:
        withheld = ""
        if condition.flbench and not condition.poc_file:
            withheld = " (the crashing input's bytes withheld)"
        have.append(f"- The sanitizer report: `{p.error_report}`{withheld}")
    if condition.source:
        have.append(
            f"- The vulnerable source tree: `{src}` (paths in the report look like "
            f"`/src/{project or '<project>'}/...`;\n  they are the same files under "
            f"`{p.source_dir}/`)"
        )
    if condition.poc_file:
        have.append(f"- The crashing input (the PoC file): `{p.poc}`")
    if condition.run_poc:
        have.append("- `run_poc`: green runs the vulnerable fuzz target on the crashing input")
    have.append(f"- A folder for your answer: `{p.workspace}/shared/`")
    granted = ""
    if condition.flbench:
        missing = [
            w
            for w, given in (
                ("no source tree", not condition.source),
                ("no sanitizer report", not condition.report),
                ("no PoC file", not condition.poc_file),
                ("no run_poc", not condition.run_poc),
            )
            if given
        ]
        granted = (
            f"\nThis task runs under FLBench's condition `{condition.name}`: it grants what is "
            f"listed above and nothing else ({', '.join(missing) or 'nothing withheld'}). The "
            "fuzz target and `arvo` are not in the container: you never run the crashing input "
            "yourself.\n"
        )
    root = (
        f"- `file` is relative to the project root (`{src}`); `/src/<project>/...` paths are "
        "accepted too."
        if condition.source
        else "- `file` is relative to the project root (as in the report's "
        "`/src/<project>/...` paths, without that prefix); `/src/<project>/...` paths are "
        "accepted too."
    )
    return f"""# Root-cause analysis task {task.task_id}
{named}
A fuzzer crashed a C/C++ project. Find the ROOT CAUSE of the crash: the code that must change to
fix the bug (often not the frame where it crashed: look at callers, at the code that sized the
buffer, at the code that freed the object).

## What you have (inside a sandbox container, no network)
{chr(10).join(have)}
{granted}
{how_to_act(task, f"asks the judge to read `{p.submission}`")}
## The answer: `{p.submission}`
```json
{LOC_JSON_EXAMPLE}
```
- `locations` are ranked, most likely first; only the first 5 are scored.
{root}
- Lines are 1-based and inclusive, in the vulnerable file; keep each span tight (50 lines at most
  earns line credit).
"""


def how_to_act(task: TaskAssignment, submit: str) -> str:
    """The protocol and limits sections every ARVO kind's description ends with (``submit``:
    what ``submit`` does in this kind)."""
    p, lim = task.paths, task.limits
    return f"""## How to act
Send messages in this conversation (A2A context `{task.task_id}`):
- `execute: <shell command>` runs the command in the container (bash, cwd `{p.workspace}`) and
  answers `<returncode>N</returncode><output>...</output>`. Timeout {lim.command_timeout_s:g} s per
  command; long outputs are cut in the middle.
- `submit` {submit}; the reply says whether it was accepted or lists what is wrong so you can
  fix it and submit again.
{RUN_POC if "run_poc" in task.offers else ""}Every request must carry the task token: the `token` field of a data part, or a last line
`token: {task.token}` in a text message.

## Limits
At most {lim.max_steps} commands; the task ends at {lim.deadline.isoformat()} (UTC) or after a long
idle period, whichever comes first.
"""
