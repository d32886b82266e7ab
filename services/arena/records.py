"""Complete records: what green withheld from a run's records, fetched again, and what is still
missing, said.

Green withholds the fields that say something about the answer (ARVO's floors, the ground truth
and its hash) while any task of the same bug is unfinished, anywhere: a second trial, or another
agent's run of the same tasks (``docs/security.md``). Its view says so (``disclosed``:
``pending``; ``withheld``: which fields). So:

- ``arena run`` fetches a pending record again when another attempt of its reference ends
  (:meth:`Completion.after`), and at its end waits, up to ``--complete-wait`` seconds, for green to
  release the rest (:meth:`Completion.settle`: one request per reference and poll);
- ``arena report`` fetches every record green did not show whole (:func:`repair`: runs recorded
  before green said so too), when green is reachable and still has the tasks;
- what is still missing is listed in ``report.md`` with the reason (:func:`gaps`): a record
  without ``project`` is its own cluster in the intervals, one without ``floors`` stays out of
  the floor means; nothing falls back silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from services.arena.client import GreenAuth, GreenClient, GreenUnreachable, check_green
from services.arena.results import (
    SCORE_FLAGS,
    RunOutcome,
    RunResults,
    compact_scores,
    decisive,
)
from services.shared.files import write_json_atomic
from services.shared.http import async_client
from services.shared.task_ref import TaskRef

PENDING = "pending"
FETCHED_AGAIN = "asked green again: "
"""A record's note saying why ``arena report`` could not complete it (the latest attempt)."""
REPAIR_JOBS = 8
"""Records ``arena report`` asks green for at once."""
WHY = {
    "pending": "withheld by green while another task of the same bug was unfinished "
    "(`arena report` fetches it once they have ended)",
    "public": "green showed only its public fields (no operator token)",
}


def incomplete(o: RunOutcome, *, unknown: bool = False) -> bool:
    """Whether green did not show ``o``'s record whole (``unknown``: also a record of a green or
    a run from before green said so)."""
    if not o.task_id or not o.status.terminal:
        return False
    return o.disclosed in (PENDING, "public") or (unknown and o.disclosed is None)


def apply(run_dir: Path, o: RunOutcome, task: dict[str, Any]) -> bool:
    """Take green's view ``task`` of ``o``'s task into the record (scores, provenance, what was
    withheld) and its ``task.json``; the rest of the record (counters, notes, audit) stays, and
    the run's aggregate is the caller's to refresh. True when the record is now whole."""
    if task.get("id") != o.task_id or task.get("status") != o.status.value:
        return False  # not the task recorded, or not as recorded: keep the record
    o.scores = compact_scores(task.get("scores"))
    o.provenance = decisive(task.get("provenance"))
    o.disclosed = task.get("disclosed")
    o.withheld = list(task.get("withheld") or [])
    if o.dir:
        write_json_atomic(run_dir / o.dir / "task.json", task)
    return not incomplete(o)


async def fetch(green: GreenClient, run_dir: Path, o: RunOutcome) -> str | None:
    """Ask green for ``o``'s task again and apply it; None when the record is now whole, else
    why not. Raises :class:`GreenUnreachable`."""
    try:
        resp = await green.request("GET", f"/tasks/{o.task_id}")
    except httpx.HTTPError as exc:
        return f"GET /tasks/{o.task_id} failed: {type(exc).__name__}"
    if resp.status_code == 404:
        return "green no longer has the task"
    if resp.status_code != 200:
        return f"green answered HTTP {resp.status_code}"
    try:
        task = resp.json()
    except ValueError:
        return "green's answer is not JSON"
    if apply(run_dir, o, task):
        return None
    return WHY.get(str(o.disclosed), "green's record of the task differs from the run's")


@dataclass
class Completion:
    """The pending records of one ``arena run``, fetched again as their bugs' tasks end."""

    green: GreenClient
    results: RunResults
    run_dir: Path
    save: Callable[[], None] = lambda: None
    """Called once records were made whole (the CLI saves results.json)."""

    def pending(self, ref: TaskRef | None = None) -> list[RunOutcome]:
        return [
            o
            for o in self.results.tasks
            if incomplete(o) and o.disclosed == PENDING and ref in (None, o.task_ref)
        ]

    async def after(self, ref: TaskRef, save: bool = True) -> bool:
        """An attempt of ``ref`` ended: fetch its pending records again (the bug may be done);
        whether any was made whole (then saved, with ``save``)."""
        done = False
        for o in self.pending(ref):
            if await fetch(self.green, self.run_dir, o) is not None:
                break  # still withheld: the others of the bug are too
            done = True
        if done and save:
            self.save()
        return done

    async def settle(self, wait_s: float, stop: asyncio.Event, interval_s: float) -> int:
        """Wait up to ``wait_s`` (or until ``stop``) for green to release the pending records,
        polling one record per reference every ``interval_s``; the number still pending."""
        deadline = time.monotonic() + wait_s
        while True:
            refs = list(dict.fromkeys(o.task_ref for o in self.pending()))
            done = [await self.after(ref, save=False) for ref in refs]
            if any(done):
                self.save()
            left = len(self.pending())
            remaining = deadline - time.monotonic()
            if not left or remaining <= 0 or stop.is_set():
                return left
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(interval_s, remaining)):
                    await stop.wait()


async def repair(green: GreenClient, results: RunResults, run_dir: Path) -> dict[str, str]:
    """Fetch every record green did not show whole (or did not say it did) again: per attempt
    label, why it is still incomplete (empty: all whole). Green unreachable: said for each."""
    todo = [o for o in results.tasks if incomplete(o, unknown=True)]
    why: dict[str, str] = {}
    jobs = asyncio.Semaphore(REPAIR_JOBS)

    async def one(o: RunOutcome) -> None:
        async with jobs:
            try:
                problem = await fetch(green, run_dir, o)
            except GreenUnreachable as exc:
                problem = str(exc)
            o.notes = [n for n in o.notes if not n.startswith(FETCHED_AGAIN)]
            if problem is not None:
                why[o.label] = problem
                o.notes.append(FETCHED_AGAIN + problem)

    await asyncio.gather(*(one(o) for o in todo))
    return why


def repair_run(
    results: RunResults, run_dir: Path, green_url: str, token: str | None, grace_s: float = 10.0
) -> dict[str, str]:
    """:func:`repair` against the green at ``green_url`` (``token``: the operator's): per
    attempt label, why its record is still incomplete. Raises :class:`GreenUnreachable`."""

    async def run() -> dict[str, str]:
        timeout = httpx.Timeout(30.0, connect=5.0)
        auth = GreenAuth(green_url, token)
        async with async_client(timeout=timeout, trust_env=False, auth=auth) as client:
            await check_green(client, green_url)
            green = GreenClient(client, green_url, grace_s)
            results.kinds |= await green.kinds()  # what each record should carry, if unknown
            return await repair(green, results, run_dir)

    return asyncio.run(run())


@dataclass
class Gap:
    """A record that lacks fields the others of its kind have (or that green withheld)."""

    label: str
    task_id: str | None
    fields: list[str]
    why: str


def _expected(results: RunResults) -> dict[str, set[str]]:
    """Per kind, the score fields (of those a record keeps) each record should have: those green
    declared for it (``GET /kinds``), and any that some record of it has."""
    out: dict[str, set[str]] = {}
    for kind, declared in results.kinds.items():
        out[kind] = {k for k in declared.get("fields") or () if k in SCORE_FLAGS}
    for o in results.tasks:
        out.setdefault(o.kind, set()).update(k for k in SCORE_FLAGS if k in (o.scores or {}))
    return out


def gaps(results: RunResults) -> list[Gap]:
    """The records that lack a field green declared for their kind or that the run's other
    records of their kind have, or that green withheld part of, each with the reason."""
    expected = _expected(results)
    out = []
    for o in results.tasks:
        held = [w.removeprefix("scores.") for w in o.withheld if w.startswith("scores.")]
        lacking = sorted(expected.get(o.kind, set()) - set(o.scores or {}))
        fields = sorted({*lacking, *(k for k in held if k in SCORE_FLAGS)})
        if not fields:
            continue
        tried = [n for n in o.notes if n.startswith(FETCHED_AGAIN)]
        if tried:
            why = tried[-1]
        elif o.disclosed in WHY:
            why = WHY[o.disclosed]
        elif not o.scores:
            why = f"no scores: the task ended before green scored it ({o.end_reason or o.status})"
        elif o.disclosed is None:
            why = "not in the record as saved (`arena report` asks green for it)"
        else:
            why = "not in green's record of the task"
        out.append(Gap(o.label, o.task_id, fields, why))
    return out


def gaps_markdown(results: RunResults) -> list[str]:
    """``report.md``'s section on incomplete records (nothing when every record is whole and
    green said so of each)."""
    found = gaps(results)
    unchecked = [
        o
        for o in results.tasks
        if incomplete(o, unknown=True)
        and o.disclosed is None
        and not any(n.startswith(FETCHED_AGAIN) for n in o.notes)
    ]
    if not found and not unchecked:
        return []
    lines = ["", "## Incomplete records", ""]
    if found:
        lines += ["| attempt | task | missing | why |", "|---|---|---|---|"]
        for g in found:
            task = (g.task_id or "-")[:8]
            lines.append(f"| {g.label} | {task} | {', '.join(g.fields)} | {g.why} |")
        lines += [
            "",
            "A record without `project` is a cluster of its own in the intervals; one without "
            "`floors` is left out of the floor means; one without `bug_class` out of the "
            "bug-class table. `arena report` fetches what green withheld once every task of the "
            "bug has ended.",
        ]
    if unchecked:
        lines += [
            "",
            f"{len(unchecked)} record(s) were saved before green said what it withheld, and green "
            "has not been asked since (unreachable, or `--offline`): what they lack may not be "
            "listed. `arena report` asks when green is reachable.",
        ]
    return lines
