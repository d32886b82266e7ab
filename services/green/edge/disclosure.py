"""What of a task's record a caller may see.

The ground truth (the changed files, functions and lines, and every score detail that names
them: the floors too, which say whether the crash frame is the fix) is for the operator only,
and not even for the operator while any task of the same bug is unfinished: a hostile agent that
learned the operator's token, or an operator's tool that shows results to an agent, must not
turn a finished task into an answer key for a running one. Anyone else sees the numbers only
(and what the kind declares public: ARVO's project and bug class, which the agent's crash report
names), and of a task whose bug has an unfinished task not even those: no scores, no submission,
no commands, while an agent may be working on that bug (another attempt's answer, or the score
of a guess, would be its oracle). Each view says what it withheld (``disclosed``, ``withheld``),
so a client knows to ask again: ``arena`` does, once every task of the bug has ended.

The rule holds on every face, and this module is where each asks it: a task's record
(:meth:`Disclosure.task`, :meth:`Disclosure.tasks`), everything that shows what its agent did
(its commands, their live stream, purple's trajectory of it: :meth:`Disclosure.require_shown`,
a 403 that says why), and every number made of its scores (a run's means, its plots, a
comparison of runs, an assessment's record: :meth:`Disclosure.scored`, the tasks they may be
made of).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fastapi import HTTPException, status

from services.green.edge.auth import Caller
from services.green.kinds.metrics import public_score_keys, secret_asset_names
from services.green.kinds.registry import KINDS
from services.green.store.crud import TaskStore
from services.green.store.models import Task, TaskPublic
from services.green.store.offloop import Database
from services.shared.outcome import TaskOutcome

WITHHELD = (
    "a task of this bug is unfinished: until it ends, the commands, trajectory, submission and "
    "scores of its tasks are the operator's"
)
"""Why a caller other than the operator is refused a task's commands (:meth:`Disclosure.withheld`)."""


def public_scores(kind: str, scores: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A task's scores without anything that names the ground truth: the fields its kind
    declares harmless (:func:`services.green.kinds.metrics.public_score_keys`)."""
    if scores is None:
        return None
    keys = public_score_keys(KINDS.get(kind))
    return {k: v for k, v in scores.items() if k in keys}


def without_secrets(kind: str, provenance: dict[str, Any]) -> dict[str, Any]:
    """A provenance without the hashes that would let a guessed answer be checked offline: the
    ground truth's, and those of the assets the kind keeps secret (the PoC, the fix)."""
    secret = secret_asset_names(KINDS.get(kind))
    out = {k: v for k, v in provenance.items() if k != "ground_truth_sha256"}
    for key in ("assets_sha256", "assets_signature_sha256"):
        assets = out.get(key)
        if secret and isinstance(assets, dict):
            out[key] = {k: v for k, v in assets.items() if k not in secret}
    return out


def _withheld(task: Task, view: TaskPublic) -> list[str]:
    """The names of the fields of ``task``'s record that ``view`` leaves out (the scores of an
    unfinished task are not withheld: there are none yet)."""
    out = ["ground_truth"] if task.ground_truth is not None else []
    if "ground_truth_sha256" in (task.provenance or {}):
        out.append("provenance.ground_truth_sha256")
    if task.status.terminal:
        out += [f"scores.{k}" for k in sorted(set(task.scores or {}) - set(view.scores or {}))]
    if task.submission is not None and view.submission is None:
        out.append("submission")
    if view.provenance:  # a kind's secret assets (the PoC, the fix)
        shown = view.provenance.get("assets_sha256") or {}
        hidden = set((task.provenance or {}).get("assets_sha256") or {}) - set(shown)
        out += [f"provenance.assets_sha256.{name}" for name in sorted(hidden)]
    return out


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
        busy = await self.db.run(self.store.unfinished_bugs, {t.bug for t in ended})
        return {t.id for t in ended if t.bug not in busy}

    async def withheld(self, tasks: Iterable[Task]) -> set[str]:
        """Ids of the tasks of which this caller may see only their state (no scores, no
        submission, no commands): for anyone but the operator, the tasks of every bug that
        has an unfinished task (its own included)."""
        if self.caller.operator:
            return set()
        rows = list(tasks)
        unfinished = {t.id for t in rows if not t.status.terminal}  # their bug: themselves
        ended = [t for t in rows if t.id not in unfinished]
        if not ended:
            return unfinished
        busy = await self.db.run(self.store.unfinished_bugs, {t.bug for t in ended})
        return unfinished | {t.id for t in ended if t.bug in busy}

    async def require_shown(self, task: Task) -> None:
        """Refuse (403, :data:`WITHHELD`) what shows ``task``'s agent at work (its commands and
        their stream, its trajectory) unless this caller may see it now."""
        if await self.withheld([task]):
            raise HTTPException(status.HTTP_403_FORBIDDEN, WITHHELD)

    async def scored(self, tasks: Iterable[Task]) -> list[Task]:
        """The ended tasks whose scores this caller may see now: what any number shown to it
        (a mean, a plot, a comparison) is made of. The others count as not ended."""
        rows = list(tasks)
        withheld = await self.withheld(rows)
        return [t for t in rows if t.status.terminal and t.id not in withheld]

    async def task(self, task: Task) -> TaskPublic:
        """The API view of one task: scores once it has ended, the ground truth if allowed, and
        what was withheld (``disclosed``, ``withheld``: a client fetches a ``pending`` record
        again once the bug's other tasks have ended)."""
        reveal = task.id in await self.revealable([task])
        return self.view(task, reveal, task.id in await self.withheld([task]))

    def view(self, task: Task, reveal: bool, withhold: bool) -> TaskPublic:
        """The API view of one task, whose ground truth is shown when ``reveal``, and only its
        state when ``withhold``."""
        view = TaskPublic.model_validate(task, from_attributes=True)
        if withhold:
            view.scores = view.submission = None
        if not task.status.terminal:
            view.scores = None
        elif not reveal and view.scores is not None:
            view.scores = public_scores(task.kind, task.scores)
        if not reveal:
            view.ground_truth = None
            if view.provenance:  # its hash would let a guessed answer be checked offline
                view.provenance = without_secrets(task.kind, view.provenance)
            # pending: more is shown once no task of the bug is unfinished (ask again then)
            view.disclosed = "pending" if self.caller.operator or withhold else "public"
            view.withheld = _withheld(task, view)
        return view

    async def tasks(self, tasks: list[Task]) -> list[TaskPublic]:
        allowed, withheld = await self.revealable(tasks), await self.withheld(tasks)
        return [self.view(t, t.id in allowed, t.id in withheld) for t in tasks]

    async def result(
        self,
        result: dict[str, Any],
        aggregate: Callable[[list[TaskOutcome]], dict[str, Any]],
    ) -> dict[str, Any]:
        """A stored assessment result: its tasks redacted (:meth:`outcomes`), and its
        ``aggregate`` made again with ``aggregate`` of the tasks whose scores this caller may
        see, when it may not see them all."""
        tasks = result.get("tasks")
        if not isinstance(tasks, list):
            return result
        shown, withheld = await self._outcomes(tasks)
        out = {**result, "tasks": shown}
        if withheld:
            kept = [TaskOutcome.model_validate(o) for o in tasks if o["task_id"] not in withheld]
            out["aggregate"] = aggregate(kept) if kept else None
        return out

    async def outcomes(self, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Stored assessment outcomes (``task_id``, ``scores``...), redacted where needed."""
        return (await self._outcomes(tasks))[0]

    async def _outcomes(self, tasks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
        stored = await self.db.run(self.store.get_many, [o["task_id"] for o in tasks])
        allowed, withheld = await self.revealable(stored), await self.withheld(stored)
        kinds = {t.id: t.kind for t in stored}

        def shown(o: dict[str, Any]) -> dict[str, Any]:
            if o["task_id"] in withheld:
                return {**o, "scores": None}
            if o["task_id"] in allowed:
                return o
            return {**o, "scores": public_scores(kinds.get(o["task_id"], ""), o.get("scores"))}

        return [shown(o) for o in tasks], withheld
