"""The task-kind seam."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from services.sandbox.base import Sandbox
from services.shared.protocol import TaskAssignment, TaskPaths

_REF_RE = re.compile(r"^\s*(?:(?P<kind>[a-z][a-z0-9_-]*)\s*:\s*)?(?P<ref>\S+?)\s*$", re.IGNORECASE)


def split_task_ref(text: str | int) -> tuple[str, str]:
    """``"arvo:10055"`` -> ("arvo", "10055"); ``"swebench:a__b-1"`` -> ("swebench", "a__b-1");
    a bare id is an ARVO id. Raises ValueError for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        return "arvo", str(text)
    m = _REF_RE.match(str(text))
    if not m:
        raise ValueError(f"not a task id: {text!r} (expected arvo:<n> or swebench:<instance>)")
    return (m.group("kind") or "arvo").lower(), m.group("ref")


@runtime_checkable
class TaskPlan(Protocol):
    """What a kind prepared for one task on green's side (never sent to the agent as such)."""

    image: str
    """The task container's image."""
    paths: TaskPaths
    """Where things are inside the container (told to the agent)."""
    workdir: str
    """Where the agent's commands run."""
    log_key: str
    """The per-task log file name (``arvo_<id>``)."""

    async def populate(self, sandbox: Sandbox) -> None:
        """Put the agent's workspace into a fresh container (through the Docker API)."""
        ...

    def wrap(self, command: str) -> str:
        """The agent's command as the container must run it (e.g. with an environment
        activated first); the command itself is what is logged and stored."""
        ...

    def describe(self, task: TaskAssignment) -> str:
        """The task description the agent reads first."""
        ...

    async def read_submission(self, sandbox: Sandbox) -> tuple[dict[str, Any] | None, list[str]]:
        """Read and validate what the agent submitted: (submission, []) or (None, errors)."""
        ...

    async def score(self, submission: dict[str, Any] | None) -> dict[str, Any]:
        """Score a valid submission (None: no valid submission, every metric 0). May take
        long (e.g. run tests in a fresh container); CPU work goes to a thread, not the loop."""
        ...

    def ground_truth(self) -> dict[str, Any] | None:
        """What the answer is judged against, stored with the task (hidden until it ends)."""
        ...


@runtime_checkable
class TaskKind(Protocol):
    name: str
    """The prefix of task ids: ``arvo`` in ``arvo:10055``."""
    assignment: type[TaskAssignment]
    """The data part purple receives (:class:`RcaTask`, :class:`SweTask`)."""

    def canonical(self, ref: str) -> str:
        """Validate the syntax of an id and return its canonical form (ValueError if bad)."""
        ...

    def check(self, ref: str) -> None:
        """Raise UnknownTask when the source has no such task. May block (downloads)."""
        ...

    def prepare(self, ref: str) -> TaskPlan:
        """Fetch and check everything the task needs. May block."""
        ...

    def aggregate(self, records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """Means over finished tasks of this kind (plain records: status, failure_kind, scores)."""
        ...
