"""The task description green sends to purple: what an LLM (or a person) reads first."""

from __future__ import annotations

from services.shared.protocol import TaskAssignment

LOC_JSON_EXAMPLE = """{
  "reasoning": "why these locations are the root cause",
  "locations": [
    {"file": "src/decoder.c", "function": "read_chunk",
     "line_start": 120, "line_end": 126, "description": "length is not checked against the buffer"}
  ]
}"""


def describe_task(task: TaskAssignment, project: str | None, arvo_id: str | None = None) -> str:
    """``arvo_id`` is named only when green does not mask it (GREEN_MASK_ARVO_ID=false)."""
    p, lim = task.paths, task.limits
    src = f"{p.source_dir}/{project}" if project else p.source_dir
    named = f"\n(ARVO task arvo:{arvo_id})\n" if arvo_id else ""
    return f"""# Root-cause analysis task {task.task_id}
{named}
A fuzzer crashed a C/C++ project. Find the ROOT CAUSE of the crash: the code that must change to
fix the bug (often not the frame where it crashed: look at callers, at the code that sized the
buffer, at the code that freed the object).

## What you have (inside a sandbox container, no network)
- The sanitizer report: `{p.error_report}`
- The vulnerable source tree: `{src}` (paths in the report look like `/src/{project or "<project>"}/...`;
  they are the same files under `{p.source_dir}/`)
- A folder for your answer: `{p.workspace}/shared/`

## How to act
Send messages in this conversation (A2A context `{task.task_id}`):
- `execute: <shell command>` runs the command in the container (bash, cwd `{p.workspace}`) and
  answers `<returncode>N</returncode><output>...</output>`. Timeout {lim.command_timeout_s:g} s per
  command; long outputs are cut in the middle.
- `submit` asks the judge to read `{p.submission}`; the reply says whether it was accepted or
  lists what is wrong so you can fix it and submit again.
Every request must carry the task token: the `token` field of a data part, or a last line
`token: {task.token}` in a text message.

## Limits
At most {lim.max_steps} commands; the task ends at {lim.deadline.isoformat()} (UTC) or after a long
idle period, whichever comes first.

## The answer: `{p.submission}`
```json
{LOC_JSON_EXAMPLE}
```
- `locations` are ranked, most likely first; only the first 5 are scored.
- `file` is relative to the project root (`{src}`); `/src/<project>/...` paths are accepted too.
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
Every request must carry the task token: the `token` field of a data part, or a last line
`token: {task.token}` in a text message.

## Limits
At most {lim.max_steps} commands; the task ends at {lim.deadline.isoformat()} (UTC) or after a long
idle period, whichever comes first.
"""
