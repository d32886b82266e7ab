"""What of a task's record a caller may see.

The ground truth (the changed files, functions and lines, and every score detail that names
them) is for the operator only, and not even for the operator while any task of the same bug is
unfinished: a hostile agent that learned the operator's token, or an operator's tool that shows
results to an agent, must not turn a finished task into an answer key for a running one.
Anyone else sees the numbers only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from services.green.auth import Caller
from services.green.kinds.metrics import public_score_keys
from services.green.kinds.registry import KINDS
from services.green.store.crud import TaskStore
from services.green.store.models import Task, TaskPublic
from services.green.store.offloop import Database


def public_scores(kind: str, scores: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A task's scores without anything that names the ground truth: the fields its kind
    declares harmless (:func:`services.green.kinds.metrics.public_score_keys`)."""
    if scores is None:
        return None
    keys = public_score_keys(KINDS.get(kind))
    return {k: v for k, v in scores.items() if k in keys}


class Disclosure:
    """Decides, for one caller, which tasks' ground truth may be shown."""

    def __init__(self, store: TaskStore, db: Database, caller: Caller) -> None:
        self.store = store
        self.db = db
        self.caller = caller

    async def revealable(self, tasks: Iterable[Task]) -> set[str]:
        """Ids of the tasks whose ground truth this caller may see now."""
        if not self.caller.operator:
            return set()
        ended = [t for t in tasks if t.status.terminal]
        if not ended:
            return set()
        refs = {(t.kind, t.ref_id) for t in ended}
        busy = await self.db.run(self.store.unfinished_refs, refs)
        return {t.id for t in ended if (t.kind, t.ref_id) not in busy}

    async def task(self, task: Task) -> TaskPublic:
        """The API view of one task: scores once it has ended, the ground truth if allowed."""
        return self.view(task, task.id in await self.revealable([task]))

    def view(self, task: Task, reveal: bool) -> TaskPublic:
        """The API view of one task, whose ground truth is shown when ``reveal``."""
        view = TaskPublic.model_validate(task, from_attributes=True)
        if not task.status.terminal:
            view.scores = None
        elif not reveal:
            view.scores = public_scores(task.kind, task.scores)
        if not reveal:
            view.ground_truth = None
            if view.provenance:  # its hash would let a guessed answer be checked offline
                view.provenance = {
                    k: v for k, v in view.provenance.items() if k != "ground_truth_sha256"
                }
        return view

    async def tasks(self, tasks: list[Task]) -> list[TaskPublic]:
        allowed = await self.revealable(tasks)
        return [self.view(t, t.id in allowed) for t in tasks]

    async def outcomes(self, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stored assessment outcomes (``task_id``, ``scores``...), redacted where needed."""
        stored = await self.db.run(self.store.get_many, [o["task_id"] for o in tasks])
        allowed = await self.revealable(stored)
        kinds = {t.id: t.kind for t in stored}
        return [
            o
            if o["task_id"] in allowed
            else {**o, "scores": public_scores(kinds.get(o["task_id"], ""), o.get("scores"))}
            for o in tasks
        ]
