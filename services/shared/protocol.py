"""The green <-> purple protocol: the structured data parts and their plain-text twins.

Every A2A message of a task carries a human-readable text part and a data part with the same
content; ``kind`` tells the data parts apart. A minimal third-party purple that only sends text
(``execute: ls /workspace``, ``submit``) is served too: :func:`parse_text_request` reads it.
See docs/protocol.md.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, TypeAdapter, field_validator

from services.shared.commands import CommandResult


class TaskPaths(BaseModel):
    """Where things are inside the task container (told to the agent). A kind sets the ones it
    uses; the others stay empty."""

    workspace: str
    """The agent's working folder (commands run there)."""
    source_dir: str = ""
    """The source tree to read or change."""
    error_report: str = ""
    """The crash report to analyse (root-cause analysis)."""
    submission: str = ""
    """The file the agent writes its answer to (empty: green reads the answer otherwise, e.g. the
    repository's diff)."""
    poc: str = ""
    """The crashing input, where the task grants the file (empty: it does not)."""


RCA_PATHS = TaskPaths(
    workspace="/workspace",
    source_dir="/workspace/src-vul",
    error_report="/workspace/error.txt",
    submission="/workspace/shared/loc.json",
)
"""The layout of a root-cause-analysis task (ARVO): the report, the vulnerable source and the
folder for loc.json. Also what a task given as plain text (no data part) is taken to use."""


class TaskLimits(BaseModel):
    max_steps: int
    command_timeout_s: float
    deadline: datetime
    """Absolute time (UTC) after which green ends the task."""


class TaskAssignment(BaseModel):
    """green -> purple: start working on a task (the fields every task kind shares)."""

    kind: str
    task_id: str
    token: str
    """Per-task secret; every execute/submit must carry it."""
    green_url: str
    paths: TaskPaths
    limits: TaskLimits
    offers: list[str] = []
    """The requests beyond ``execute`` and ``submit`` this task serves (``run_poc``: green runs
    the vulnerable target on the task's PoC, :class:`RunPoc`)."""


class RcaTask(TaskAssignment):
    """Root-cause analysis of a crash: answer with loc.json at ``paths.submission``."""

    kind: Literal["rca_task"] = "rca_task"
    paths: TaskPaths = Field(default_factory=lambda: RCA_PATHS.model_copy())


class SweTask(TaskAssignment):
    """SWE-bench: fix the issue by editing the repository at ``paths.workspace``; green takes
    the patch from the container at ``submit``."""

    kind: Literal["swe_task"] = "swe_task"


class PocTask(TaskAssignment):
    """Reproduce a vulnerability: write an input that crashes the vulnerable build to
    ``paths.submission`` (the description says what help the task gives)."""

    kind: Literal["poc_task"] = "poc_task"


class FixTask(TaskAssignment):
    """Fix a vulnerability: edit the source tree at ``paths.source_dir``; green takes the diff
    against the task's pristine tree at ``submit``."""

    kind: Literal["fix_task"] = "fix_task"


MAX_COUNT = 10**12
"""The largest step or token count green records (far beyond any real task)."""
MAX_COST = 1_000_000.0
"""The largest cost (USD) green records."""

Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
"""A step or token count an agent reports: a whole number, 0 to :data:`MAX_COUNT`."""
Dollars = Annotated[
    float, Field(ge=0, le=MAX_COST, allow_inf_nan=False), AfterValidator(lambda v: round(v, 6))
]
"""A cost an agent reports: finite, 0 to :data:`MAX_COST`, in whole micro-dollars (a sum of
prices reads ``1.0212``, not ``1.0211999999999999``)."""


class Usage(BaseModel):
    """The agent's own running usage (its self-report: green records it, never trusts it for
    scoring or attribution). The one validator of the numbers an agent reports."""

    steps: Count = 0
    tokens_in: Count = 0
    tokens_out: Count = 0
    cost: Dollars = 0.0


class Execute(BaseModel):
    """purple -> green: run one shell command in the task container. ``usage``, optional, is
    the agent's running totals so far: green records them as they accrue, so a task that never
    submits still shows what it spent."""

    kind: Literal["execute"] = "execute"
    command: str = Field(min_length=1)
    timeout: float | None = Field(None, gt=0)
    token: str | None = None
    usage: Usage | None = None


class RunPoc(BaseModel):
    """purple -> green, where the task offers it (``TaskAssignment.offers``): run the vulnerable
    target on the task's own PoC, in a fresh container of green's. Answered like
    :class:`Execute` (a :class:`CommandResult`: the run's exit status and output; where the task
    withholds the PoC file, nothing of its bytes or hashes); counted as a step."""

    kind: Literal["run_poc"] = "run_poc"
    token: str | None = None
    usage: Usage | None = None


Result = CommandResult
"""green -> purple: the reply to :class:`Execute` is the command's result itself (deprecated
alias: the name of the one type is :class:`~services.shared.commands.CommandResult`)."""


class Submit(BaseModel):
    """purple -> green: the agent is done; green reads the task kind's answer (loc.json for root-cause
    analysis, the repository's diff for SWE-bench) and judges it. The counters are the agent's
    own usage, recorded with the task."""

    kind: Literal["submit"] = "submit"
    token: str | None = None
    steps: Count = 0
    tokens_in: Count = 0
    tokens_out: Count = 0
    cost: Dollars = 0.0

    def usage(self) -> Usage:
        return Usage(
            steps=self.steps, tokens_in=self.tokens_in, tokens_out=self.tokens_out, cost=self.cost
        )


class SubmitResult(BaseModel):
    """green -> purple: the reply to :class:`Submit`."""

    kind: Literal["submit_result"] = "submit_result"
    accepted: bool
    errors: list[str] = []


AGENT_REASON_CHARS = 1000
"""The most characters of an agent's own reason green keeps."""


class AgentReport(BaseModel):
    """purple -> green, in the data part of its A2A task's final status message: how the agent
    ended, in its own words (``reason``), and its usage. Green shows the reason marked as the
    agent's words; it never decides who is to blame (infra or agent) from it."""

    kind: Literal["agent_report"] = "agent_report"
    status: str = Field("", max_length=40)
    reason: str = ""
    usage: Usage = Usage()

    @field_validator("reason", mode="before")
    @classmethod
    def _bounded(cls, reason: object) -> object:
        return clip_reason(reason) if isinstance(reason, str) else reason


def clip_reason(text: str, limit: int = AGENT_REASON_CHARS) -> str:
    """An agent's words as green keeps them: printable, on one line, at most ``limit`` chars."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ErrorReply(BaseModel):
    """green -> purple: the request was refused (wrong token, task not running, ...)."""

    kind: Literal["error"] = "error"
    message: str


ProtocolData = Annotated[
    RcaTask
    | SweTask
    | PocTask
    | FixTask
    | Execute
    | RunPoc
    | CommandResult
    | Submit
    | SubmitResult
    | ErrorReply,
    Field(discriminator="kind"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(ProtocolData)


def parse_data(data: dict[str, Any]) -> BaseModel:
    """Validate a data part by its ``kind``. Numbers that crossed A2A as floats are coerced."""
    return _adapter.validate_python(data)


# ---- plain-text forms -------------------------------------------------------------------

_EXECUTE_RE = re.compile(r"^\s*execute:\s?(?P<cmd>.+)\Z", re.DOTALL | re.IGNORECASE)
_SUBMIT_RE = re.compile(r"^\s*submit\s*\Z", re.IGNORECASE)
_RUN_POC_RE = re.compile(r"^\s*run_poc\s*\Z", re.IGNORECASE)
RUN_POC_TEXT = "run_poc"

Request = Execute | Submit | RunPoc
"""What purple asks of a running task."""
REQUEST_KINDS = ("execute", "submit", "run_poc")


def parse_text_request(text: str) -> Request | None:
    """Read the plain-text requests a text-only agent sends: ``execute: <cmd>``, ``submit`` or
    ``run_poc``."""
    if m := _EXECUTE_RE.match(text):
        cmd = m.group("cmd").strip()
        return Execute(command=cmd) if cmd else None
    if _SUBMIT_RE.match(text):
        return Submit()
    if _RUN_POC_RE.match(text):
        return RunPoc()
    return None


def execute_text(command: str) -> str:
    return f"execute: {command}"


def result_text(result: CommandResult) -> str:
    notes = []
    if result.timed_out:
        notes.append("[command timed out and was killed]")
    if result.truncated:
        notes.append(f"[{result.bytes_cut} bytes of output cut from the middle]")
    suffix = ("\n" + "\n".join(notes)) if notes else ""
    return f"<returncode>{result.exit_code}</returncode>\n<output>{result.output}</output>{suffix}"


def submit_result_text(reply: SubmitResult) -> str:
    if reply.accepted:
        return "Submission accepted."
    return "Submission refused:\n" + "\n".join(f"- {e}" for e in reply.errors)


# ---- what purple's agent card says of itself (read by green for each task's provenance) -------

MODEL_EXTENSION = "urn:arvo-arena:purple:model:v1"
"""Purple's card extension whose ``params`` name its model and request settings (model id,
temperature, top_p, seed, max_tokens, context window, limits; never a key or a URL). Only a purple
with a model has it (docs/models.md)."""
AGENT_EXTENSION = "urn:arvo-arena:purple:agent:v1"
"""Purple's card extension whose ``params`` say what answers: ``policy`` (its name),
``agent_config`` (the config file's name and the sha256 of the whole effective config; None for a
policy without one) and ``build`` (version, commit, dirty flag, lock-file sha256, Python)."""
