"""A complete third task kind in one file: find the needle in a haystack (docs/kinds.md).

``needle:<n>`` puts ``/workspace/haystack.txt`` (1,000 lines, one of them ``NEEDLE``) into a
container; the agent writes ``{"line": <number>}`` to ``/workspace/answer.json`` and submits;
the score is ``found`` 1.0 or 0.0. It is what a new kind needs and nothing more: an id check, its traits
(``KindTraits()``: it declares no metrics, so its scores are shown only with the truth), a
plan (image, paths, workspace, prompt, reading and scoring the answer, the ground truth: a
``TaskPlan[Answer, Found, Needle]`` over its own three pydantic models) and an aggregate. Copied to ``services/green/kinds/needle/`` and registered with one line in
``services/green/kinds/registry.py``, green serves it. It also offers dataset tools (list,
prefetch, verify: :mod:`.datasets`) through ``services/green/kinds/datasets.py``, so
``/datasets/*`` and ``verified_only`` work for it too, and a report for the dashboard (the
haystack, grouped by the half the needle is in: ``services/green/kinds/report.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from services.green.config import GreenSettings
from services.green.kinds.datasets import DatasetContext
from services.green.kinds.errors import UnknownTask
from services.green.kinds.report import TaskReport
from services.green.kinds.traits import KindTraits
from services.sandbox.base import Sandbox, SandboxProvider
from services.shared.outcome import TaskOutcome, TaskStatus
from services.shared.protocol import RcaTask, TaskAssignment, TaskPaths

from .datasets import NeedleDatasets  # relative: the folder works wherever it is copied

LINES = 1000
COUNT = 1000
"""The tasks there are: ``needle:0`` .. ``needle:999``."""
BROKEN = "999"
"""The deliberately broken task: its haystack has no needle (verification catches it)."""
PATHS = TaskPaths(workspace="/workspace", submission="/workspace/answer.json")


def needle_line(ref_id: str) -> int:
    """Where the needle of task ``needle:<ref_id>`` is (1-based)."""
    return int(ref_id) % LINES + 1


class Answer(BaseModel):
    """The submission: the line the agent names."""

    line: int


class Found(BaseModel):
    """The score."""

    found: float
    submitted: bool


class Needle(BaseModel):
    """The ground truth: where the needle is."""

    line: int


def haystack(ref_id: str) -> str:
    """The task's ``haystack.txt`` (the broken task's has no needle)."""
    lines = ["hay"] * LINES
    if ref_id != BROKEN:
        lines[needle_line(ref_id) - 1] = "NEEDLE"
    return "\n".join(lines)


@dataclass
class NeedlePlan:
    """A ``TaskPlan[Answer, Found, Needle]``."""

    ref_id: str
    image: str
    paths: TaskPaths = field(default_factory=PATHS.model_copy)
    workdir: str = "/workspace"
    writable: tuple[str, ...] = ("/workspace",)

    @property
    def log_key(self) -> str:
        return f"needle_{self.ref_id}"

    async def populate(self, sandbox: Sandbox) -> None:
        await sandbox.put_files(self.workdir, {"haystack.txt": haystack(self.ref_id).encode()})

    def wrap(self, command: str) -> str:
        return command

    def describe(self, task: TaskAssignment) -> str:
        return (
            f"# Task {task.task_id}\nOne line of /workspace/haystack.txt reads NEEDLE. Write "
            '{"line": <its 1-based number>} to /workspace/answer.json, then submit.\n'
            "Send `execute: <command>` to run a shell command and `submit` when done, each with "
            f"a last line `token: {task.token}`. At most {task.limits.max_steps} commands."
        )

    async def read_submission(self, sandbox: Sandbox) -> tuple[Answer | None, list[str]]:
        try:
            answer = json.loads(await sandbox.read_file(PATHS.submission, max_bytes=4096))
            return Answer(line=int(answer["line"])), []
        except FileNotFoundError:
            return None, [f"{PATHS.submission} does not exist"]
        except (ValueError, TypeError, KeyError) as exc:
            return None, [f'{PATHS.submission} must hold {{"line": <number>}}: {exc}']

    async def score(self, submission: Answer | None) -> Found:
        found = submission is not None and submission.line == needle_line(self.ref_id)
        return Found(found=1.0 if found else 0.0, submitted=submission is not None)

    def ground_truth(self) -> Needle:
        return Needle(line=needle_line(self.ref_id))


class NeedleKind:
    name = "needle"
    assignment = RcaTask  # the agent answers in a file, as in root-cause analysis
    traits = KindTraits()  # declares nothing: its scores are shown only with the ground truth
    image = "arena/arvo-base:bookworm"  # any image with a shell

    @staticmethod
    def canonical(ref_id: str) -> str:
        if not ref_id.isdigit():
            raise ValueError(f"a needle task id is a number, not {ref_id!r}")
        return str(int(ref_id))

    @classmethod
    def from_settings(cls, settings: GreenSettings, sandboxes: SandboxProvider) -> NeedleKind:
        return cls()

    def datasets(self, context: DatasetContext) -> NeedleDatasets:
        """The optional dataset tools (services/green/kinds/datasets.py)."""
        return NeedleDatasets(self, context.sandboxes, COUNT)

    def report(self, ref_id: str) -> TaskReport:
        """The optional report (services/green/kinds/report.py): the haystack."""
        half = "top half" if needle_line(ref_id) <= LINES // 2 else "bottom half"
        return TaskReport("Haystack", "haystack.txt", haystack(ref_id), half, "one line is NEEDLE")

    def position(self, report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
        return f"line {ground_truth['line']}" if ground_truth else "unknown"

    def sources(self, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        return {"haystack.txt": haystack(ref_id).encode()} if "haystack.txt" in paths else {}

    def check(self, ref_id: str) -> None:
        """Every number below COUNT is a task."""
        if int(ref_id) >= COUNT:
            raise UnknownTask(f"there are {COUNT} needle tasks (0 to {COUNT - 1})")

    def prepare(self, ref_id: str) -> NeedlePlan:
        return NeedlePlan(ref_id, self.image)

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        ended = [o for o in outcomes if o.status.terminal]
        found = sum(
            1 for o in ended if o.status is TaskStatus.completed and (o.scores or {}).get("found")
        )
        return {"n_tasks": len(ended), "found": found / len(ended) if ended else 0.0}
