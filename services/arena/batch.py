"""A batch on green: send each task, follow it, save its logs and record its outcome.

Per task reference, of any kind green offers: ``POST /tasks`` (at most ``concurrency`` in
flight), poll ``GET /tasks/{id}`` until the task ends, save green's view, its command log and
purple's trajectory (both from green; the trajectory also as ATIF) under
``<run>/tasks/<kind>_<id>-<task8>/``, and record the outcome in ``results.json`` at once (so an
interrupted run resumes where it stopped). Ctrl-C once cancels the tasks in flight on green;
twice stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.live import Live
from rich.markup import escape

from services.arena.atif_export import ATIF_FILE, TRAJECTORY_FILE, write_atif
from services.arena.client import (
    UNREACHABLE,
    GreenAuth,
    GreenClient,
    GreenUnreachable,
    check_green,
    detail,
)
from services.arena.live import LiveView
from services.arena.records import Completion
from services.arena.results import (
    REFUSED,
    RESULTS_FILE,
    RunOutcome,
    RunResults,
    Session,
    Slot,
    outcome_from_task,
    slot_label,
    task_dir_name,
    write_task_file,
)
from services.shared.audit import audit
from services.shared.http import async_client
from services.shared.task_ref import TaskRef

EXIT_ALL_FAILED = 1
EXIT_GREEN_UNREACHABLE = 2
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130


@dataclass
class RunConfig:
    green: str
    purple: str | None = None
    concurrency: int = 4
    max_steps: int | None = None
    task_timeout_s: float | None = None
    command_timeout_s: float | None = None
    poll_interval_s: float = 2.0
    green_grace_s: float = 60.0
    """How long green may be unreachable before the run stops."""
    api_token: str | None = field(default=None, repr=False)
    """Green's GREEN_API_TOKEN, sent to green only (never recorded in results.json)."""
    complete_wait_s: float = 600.0
    """How long the run waits at its end for the records green withholds while other tasks of
    their bugs are unfinished (:mod:`services.arena.records`)."""
    run_id: str | None = None
    """Green's id of the run (``POST /runs``), sent with each task (None: a green without runs)."""

    def task_body(self, ref: TaskRef, trial: int = 1) -> dict[str, Any]:
        """The ``POST /tasks`` body for a reference (green's defaults where nothing is given)."""
        body = {
            "task": str(ref),
            "trial": trial,
            "purple_url": self.purple,
            "max_steps": self.max_steps,
            "task_timeout_s": self.task_timeout_s,
            "command_timeout_s": self.command_timeout_s,
            "run_id": self.run_id,
        }
        return {k: v for k, v in body.items() if v is not None}


def _failure(slot: Slot, error: str, end_reason: str, task_id: str | None = None) -> RunOutcome:
    """An infra failure recorded by the CLI itself (green refused, lost, or the CLI broke)."""
    return RunOutcome(
        kind=slot[0].kind,
        ref_id=slot[0].id,
        trial=slot[1],
        task_id=task_id,
        status="failed",
        failure_kind="infra",
        end_reason=end_reason,
        error=error,
    )


@dataclass
class Batch:
    cfg: RunConfig
    results: RunResults
    run_dir: Path
    session: Session
    view: LiveView
    console: Console
    green: GreenClient
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: dict[str, str] = field(default_factory=dict)
    """slot label (``arvo:10055``, ``arvo:10055#2``) → green task id."""
    abort: GreenUnreachable | None = None
    records: Completion | None = None
    """The records green withheld part of, fetched again as their bugs' tasks end."""

    def save(self) -> None:
        """results.json as it is now (with its aggregate)."""
        self.results.refresh_aggregate()
        self.results.save(self.run_dir / RESULTS_FILE)

    def _record(self, outcome: RunOutcome) -> None:
        self.results.record(outcome)
        self.results.save(self.run_dir / RESULTS_FILE)
        self.view.ended(outcome)
        s = outcome.scores or {}
        score = " ".join(f"{k}={float(s[k]):.2f}" for k in self.view.metrics(s))
        why = f" — {outcome.error}" if outcome.error and outcome.status != "completed" else ""
        line = (
            f"{outcome.label} [{(outcome.task_id or '-')[:8]}] {outcome.status}"
            f" steps={outcome.steps} {score if s else ''}{why}"
        )
        self.console.print(escape(line.rstrip()), highlight=False, soft_wrap=True)

    async def _submit(self, slot: Slot) -> dict[str, Any] | None:
        """``POST /tasks``: green's view of the new task, or None (refusal recorded)."""
        try:
            resp = await self.green.post_task(self.cfg.task_body(*slot))
        except httpx.HTTPError as exc:
            error = f"POST /tasks failed: {type(exc).__name__}: {exc}"
            self._record(_failure(slot, error, "error"))
            return None
        if resp.status_code >= 400:
            error = f"green refused the task (HTTP {resp.status_code}): {detail(resp)}"
            self._record(_failure(slot, error, REFUSED))
            return None
        return resp.json()

    async def one(self, ref: TaskRef, trial: int = 1) -> None:
        slot = (ref, trial)
        label = slot_label(*slot)
        if self.stop.is_set():
            return
        self.view.update(label, status="submitting")
        task = await self._submit(slot)
        if task is None:
            return
        task_id = task["id"]
        slot = self._canonical(slot, task)
        label = slot_label(*slot)
        self.in_flight[label] = task_id
        self.session.submitted.append(label)
        try:
            task = await self.green.follow(
                task, self.cfg.poll_interval_s, self.stop, lambda t: self._polled(label, t)
            )
            await self._finish(slot, task)
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            error = f"lost track of the task on green: {type(exc).__name__}: {exc}"
            self._record(_failure(slot, error, "error", task_id))
        finally:
            self.in_flight.pop(label, None)

    def _canonical(self, slot: Slot, task: dict[str, Any]) -> Slot:
        """The slot under green's canonical reference (its answer's ``ref``): a reference the
        client wrote another way is renamed in the run."""
        try:
            ref = TaskRef.parse(task.get("ref") or slot[0])
        except ValueError:
            return slot
        if ref != slot[0]:
            self.results.rename(slot[0], ref)
        return (ref, slot[1])

    def _polled(self, label: str, task: dict[str, Any]) -> None:
        self.view.update(
            label,
            status=task.get("status", "?"),
            task_id=task["id"],
            steps=int(task.get("steps") or 0),
            cost=float(task.get("cost") or 0),
        )

    async def _finish(self, slot: Slot, task: dict[str, Any]) -> None:
        if task.pop(UNREACHABLE, False):
            return  # green's verdict is unknown: leave the id pending, a resume runs it again
        ref, trial = slot
        name = task_dir_name(ref, task["id"])
        tdir = self.run_dir / "tasks" / name
        write_task_file(tdir / "task.json", task)
        commands, note_c = await self.green.commands(task["id"])
        write_task_file(tdir / "commands.json", commands)
        note_t = await self.green.save_trajectory(task["id"], tdir / TRAJECTORY_FILE)
        note_a = (
            await asyncio.to_thread(write_atif, tdir / TRAJECTORY_FILE, tdir / ATIF_FILE)
            if note_t is None
            else None
        )
        outcome = outcome_from_task(task, task_dir=f"tasks/{name}")
        outcome.kind, outcome.ref_id, outcome.trial = ref.kind, ref.id, trial
        outcome.audit = audit(
            [str(c.get("command", "")) for c in commands or [] if isinstance(c, dict)],
            task.get("submission"),
            (task.get("scores") or {}).get("project"),
            leak=(task.get("scores") or {}).get("leak"),
        )
        outcome.trajectory = note_t is None
        outcome.notes += [n for n in (note_c, note_t, note_a) if n]
        if self.stop.is_set() and task.get("status") != "completed":
            outcome.notes.append("cancelled by the CLI (interrupted)")
        self._record(outcome)
        if self.records is not None:
            await self.records.after(ref)

    async def run(self, slots: list[Slot]) -> None:
        sem = asyncio.Semaphore(self.cfg.concurrency)

        async def worker(ref: TaskRef, trial: int) -> None:
            async with sem:
                if self.stop.is_set():
                    return
                try:
                    await self.one(ref, trial)
                except GreenUnreachable as exc:
                    self.abort = self.abort or exc
                    self.stop.set()
                except Exception as exc:  # an unexpected answer: record it, the run goes on
                    error = f"CLI error: {type(exc).__name__}: {exc}"
                    self._record(_failure((ref, trial), error, "error"))

        await asyncio.gather(*(worker(i, t) for i, t in slots))


@contextlib.contextmanager
def _interrupts(batch: Batch, session: Session, console: Console):
    """Ctrl-C once: stop the batch (it cancels the tasks in flight); twice: cancel the run."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    interrupts = 0

    def on_sigint() -> None:
        nonlocal interrupts
        interrupts += 1
        session.interrupted = True
        if interrupts == 1:
            console.print(
                "[yellow]interrupted: cancelling the tasks in flight on green "
                "(Ctrl-C again to stop at once)…[/]"
            )
            batch.stop.set()
        elif main is not None:
            main.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)


async def _complete(batch: Batch, console: Console) -> None:
    """Wait (``complete_wait_s``) for the records green withheld while other tasks of their bugs
    ran: Ctrl-C only ends the wait."""
    assert batch.records is not None
    waiting = len(batch.records.pending())
    if not waiting or batch.cfg.complete_wait_s <= 0:
        return
    console.print(
        f"{waiting} record(s) withheld by green while other tasks of their bugs run: "
        f"waiting up to {batch.cfg.complete_wait_s:g} s for them (Ctrl-C stops waiting)"
    )
    interrupted = batch.session.interrupted
    try:
        left = await batch.records.settle(
            batch.cfg.complete_wait_s, batch.stop, batch.cfg.poll_interval_s
        )
    except GreenUnreachable as exc:
        left = len(batch.records.pending())
        console.print(f"[yellow]stopped waiting:[/] {escape(str(exc))}")
    batch.session.interrupted = interrupted  # the tasks all ended: the run was not interrupted
    if left:
        console.print(
            f"[yellow]{left} record(s) still withheld:[/] `arena report {batch.run_dir}` "
            "fetches them once their bugs' tasks have ended"
        )


async def run_batch(
    cfg: RunConfig,
    results: RunResults,
    run_dir: Path,
    todo: list[Slot],
    session: Session,
    console: Console,
    done: int,
) -> int:
    """Run the attempts in ``todo``; returns the exit code. Ctrl-C once: cancel the tasks in flight
    on green and record them; twice: stop at once (what was recorded stays)."""
    view = LiveView(total=len(results.slots()), done=done)
    timeout = httpx.Timeout(30.0, connect=10.0)
    auth = GreenAuth(cfg.green, cfg.api_token)
    async with async_client(timeout=timeout, trust_env=False, auth=auth) as client:
        warning = await check_green(client, cfg.green)
        if warning:
            console.print(f"[yellow]warning:[/] {escape(warning)}")
        green = GreenClient(client, cfg.green, cfg.green_grace_s)
        results.kinds |= await green.kinds()
        refs = list(dict.fromkeys(str(ref) for ref, _ in todo))
        cfg.run_id = await green.open_run(
            results.run, refs, cfg.purple, results.trials, results.green_run
        )  # RunRefused: green does not know some of them, and nothing has started
        results.green_run = cfg.run_id or results.green_run
        batch = Batch(cfg, results, run_dir, session, view, console, green)
        batch.records = Completion(green, results, run_dir, batch.save)
        with _interrupts(batch, session, console):
            try:
                with Live(view, console=console, refresh_per_second=4, transient=False):
                    await batch.run(todo)
                if batch.abort is None and not batch.stop.is_set():
                    await _complete(batch, console)
            except asyncio.CancelledError:
                session.interrupted = True
        if cfg.run_id is not None:
            stopped = session.interrupted or batch.abort is not None
            with contextlib.suppress(GreenUnreachable):
                if note := await green.end_run(cfg.run_id, interrupted=stopped):
                    console.print(f"[yellow]note:[/] {escape(note)}")
    return _exit_code(batch, session, results, todo, console)


def _exit_code(
    batch: Batch, session: Session, results: RunResults, todo: list[Slot], console: Console
) -> int:
    """2 green lost, 130 interrupted, 1 when not one attempt of this session completed."""
    if batch.abort is not None:
        session.error = str(batch.abort)
        console.print(f"[red]error:[/] {escape(str(batch.abort))}")
        return EXIT_GREEN_UNREACHABLE
    if session.interrupted:
        return EXIT_INTERRUPTED
    ended = [o for slot in todo if (o := results.outcome(*slot)) is not None]
    if ended and not any(o.status == "completed" for o in ended):
        console.print(
            f"[red]error:[/] none of the {len(ended)} attempt(s) run now completed "
            "(see each one's error above, and in results.json)"
        )
        return EXIT_ALL_FAILED
    return 0
