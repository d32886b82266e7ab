"""``arena``: run a batch of ARVO tasks against a running green over REST, and report on it.

    python -m services.green.cli run 10055 arvo:10096 --green http://127.0.0.1:9009 --run demo
    python -m services.green.cli report results/demo

``run`` sends ``POST /tasks`` per id (at most ``--concurrency`` in flight), polls
``GET /tasks/{id}`` until the task ends, saves green's view, its command log and purple's
trajectory under ``results/<run>/tasks/``, keeps ``results/<run>/results.json`` up to date after
every task (so an interrupted run resumes where it stopped) and writes ``report.md`` with a
``scores.png`` at the end. See ``docs/cli.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from services.green.assets.ids import parse_arvo_id
from services.green.auth import find_local_token
from services.green.cli_tasks import narrow_run_ids, tasks_app, write_split
from services.green.kinds.arvo.scoring.metrics import METRICS
from services.green.report import (
    RESULTS_FILE,
    Outcome,
    RunResults,
    Session,
    outcome_from_task,
    render_report,
    task_dir_name,
)
from services.green.report.results import TERMINAL, now_iso
from services.shared.files import write_json_atomic

app = typer.Typer(
    name="arena",
    help="Batch runs of ARVO root-cause-analysis tasks against a running green, and their reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.add_typer(tasks_app, name="tasks")

EXIT_GREEN_UNREACHABLE = 2
EXIT_INTERRUPTED = 130
COMMANDS_PAGE = 5000
"""Green's largest page of ``GET /tasks/{id}/commands``."""
RETRY_STATUS = {429, 502, 503, 504}


class GreenUnreachable(Exception):
    """Green did not answer for longer than the grace period."""


# ---- ids ----------------------------------------------------------------------------------


def split_ids(values: Iterable[str]) -> list[str]:
    """Ids from arguments or an ids file: separated by whitespace or commas, ``#`` starts a
    comment; order kept, duplicates dropped."""
    out: list[str] = []
    for value in values:
        for line in value.splitlines() or [""]:
            line = line.split("#", 1)[0]
            out += [tok for tok in re.split(r"[\s,]+", line) if tok]
    return list(dict.fromkeys(out))


def canonical_id(raw: str) -> tuple[str, str | None]:
    """(canonical id, None) or (the id as given, why it is not an ARVO id)."""
    try:
        return parse_arvo_id(raw), None
    except ValueError as exc:
        return raw, str(exc)


# ---- live view ----------------------------------------------------------------------------


@dataclass
class Row:
    arvo_id: str
    status: str = "waiting"
    task_id: str = ""
    steps: int = 0
    cost: float = 0.0
    scores: dict[str, Any] | None = None
    ended: bool = False
    seq: int = 0


class LiveView:
    """A progress bar (done/total, elapsed) over a table of the tasks in flight and the last
    ones that ended."""

    def __init__(self, total: int, done: int, max_rows: int = 20) -> None:
        self.progress = Progress(
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("•"),
            TimeElapsedColumn(),
        )
        self.bar = self.progress.add_task("tasks", total=total, completed=done)
        self.rows: dict[str, Row] = {}
        self.max_rows = max_rows
        self._seq = 0

    def update(self, arvo_id: str, **changes: Any) -> None:
        row = self.rows.setdefault(arvo_id, Row(arvo_id))
        for k, v in changes.items():
            setattr(row, k, v)
        self._seq += 1
        row.seq = self._seq

    def ended(self, outcome: Outcome) -> None:
        self.update(
            outcome.arvo_id,
            status=outcome.status,
            task_id=outcome.task_id or "",
            steps=outcome.steps,
            cost=outcome.cost,
            scores=outcome.scores,
            ended=True,
        )
        self.progress.advance(self.bar)

    def table(self) -> Table:
        table = Table(expand=False, show_edge=False, pad_edge=False)
        for col in ("arvo", "task", "status", "steps", "file@1", "func@1", "line@1", "iou", "cost"):
            table.add_column(
                col, justify="right" if col not in ("arvo", "task", "status") else "left"
            )
        active = sorted((r for r in self.rows.values() if not r.ended), key=lambda r: r.seq)
        ended = sorted((r for r in self.rows.values() if r.ended), key=lambda r: -r.seq)
        shown = (active + ended)[: self.max_rows]
        style = {"completed": "green", "failed": "red", "cancelled": "yellow"}
        for r in shown:
            s = r.scores or {}

            def m(name: str, s: dict[str, Any] = s) -> str:
                if name not in s:
                    return "·"
                return f"{float(s[name]):.2f}" if name == "iou" else f"{float(s[name]):g}"

            status = f"[{style[r.status]}]{r.status}[/]" if r.status in style else r.status
            table.add_row(
                f"arvo:{r.arvo_id}",
                r.task_id[:8],
                status,
                str(r.steps),
                m("file@1"),
                m("func@1"),
                m("line@1"),
                m("iou"),
                f"{r.cost:.4f}",
            )
        hidden = len(self.rows) - len(shown)
        if hidden > 0:
            table.caption = f"… and {hidden} more"
        return table

    def __rich__(self) -> Group:
        return Group(self.progress, self.table())


# ---- the batch ----------------------------------------------------------------------------


@dataclass
class RunConfig:
    green: str
    purple: str | None = None
    purple_api: str | None = None
    """Where the CLI reaches purple's REST (default: ``purple``, else the task's purple URL)."""
    concurrency: int = 4
    max_steps: int | None = None
    task_timeout_s: float | None = None
    command_timeout_s: float | None = None
    poll_interval_s: float = 2.0
    green_grace_s: float = 60.0
    """How long green may be unreachable before the run stops."""
    api_token: str | None = field(default=None, repr=False)
    """Green's GREEN_API_TOKEN, sent to green only (never recorded in results.json)."""


class GreenAuth(httpx.Auth):
    """Adds the bearer token to requests for green's origin only (not to purple's)."""

    def __init__(self, green: str, token: str | None) -> None:
        url = httpx.URL(green)
        self.origin = (url.scheme, url.host, url.port)
        self.token = token

    def auth_flow(self, request: httpx.Request):
        if self.token and (request.url.scheme, request.url.host, request.url.port) == self.origin:
            request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


@dataclass
class Batch:
    cfg: RunConfig
    results: RunResults
    run_dir: Path
    session: Session
    view: LiveView
    console: Console
    client: httpx.AsyncClient
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: dict[str, str] = field(default_factory=dict)
    """arvo id → green task id."""
    abort: GreenUnreachable | None = None

    # ---- HTTP -----------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return self.cfg.green.rstrip("/") + path

    async def _request(
        self,
        method: str,
        path: str,
        *,
        retry: bool = True,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        """A request to green. With ``retry``, transport errors (for a POST: only failures to
        connect, so that a task is never created twice) and 429/502/503/504 are retried until
        the grace period runs out, which raises :class:`GreenUnreachable`."""
        deadline = time.monotonic() + self.cfg.green_grace_s
        delay = 0.25
        retriable: tuple[type[Exception], ...] = (
            (httpx.ConnectError, httpx.ConnectTimeout)
            if method == "POST"
            else (httpx.TransportError,)
        )
        while True:
            try:
                resp = await self.client.request(method, self._url(path), json=json, params=params)
                if not retry or resp.status_code not in RETRY_STATUS:
                    return resp
                problem = f"HTTP {resp.status_code}"
            except retriable as exc:
                if not retry:
                    raise
                problem = f"{type(exc).__name__}: {exc}"
            if time.monotonic() + delay > deadline:
                raise GreenUnreachable(
                    f"green at {self.cfg.green} did not answer {method} {path} for "
                    f"{self.cfg.green_grace_s:g}s ({problem})"
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def _get_task(self, task_id: str) -> dict[str, Any]:
        resp = await self._request("GET", f"/tasks/{task_id}")
        resp.raise_for_status()
        return resp.json()

    async def _commands(self, task_id: str) -> tuple[list[dict[str, Any]], str | None]:
        out: list[dict[str, Any]] = []
        try:
            while True:
                resp = await self._request(
                    "GET",
                    f"/tasks/{task_id}/commands",
                    params={"offset": len(out), "limit": COMMANDS_PAGE},
                )
                resp.raise_for_status()
                page = resp.json()
                out += page
                if len(page) < COMMANDS_PAGE:
                    return out, None
        except (httpx.HTTPError, ValueError) as exc:
            return out, f"command log incomplete: {type(exc).__name__}: {exc}"

    async def _trajectory(self, task: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        base = self.cfg.purple_api or self.cfg.purple or task.get("purple_url")
        if not base:
            return None, "no purple URL known: trajectory not saved"
        url = f"{base.rstrip('/')}/tasks/{task['id']}"
        try:
            resp = await self.client.get(url, timeout=10)
        except httpx.HTTPError as exc:
            return (
                None,
                f"purple not reachable at {base} ({type(exc).__name__}): trajectory not saved",
            )
        if resp.status_code != 200:
            return None, f"purple answered HTTP {resp.status_code} for {url}: trajectory not saved"
        try:
            data = resp.json()
        except ValueError:
            return None, f"purple's answer for {url} is not JSON: trajectory not saved"
        return (
            (data, None) if isinstance(data, dict) else (None, "purple's answer is not an object")
        )

    # ---- one task -------------------------------------------------------------------------

    def _record(self, outcome: Outcome) -> None:
        self.results.record(outcome)
        self.results.save(self.run_dir / RESULTS_FILE)
        self.view.ended(outcome)
        s = outcome.scores or {}
        score = " ".join(
            f"{k}={float(s.get(k, 0)):.2f}" for k in ("file@1", "func@1", "line@1", "iou")
        )
        why = f" — {outcome.error}" if outcome.error and outcome.status != "completed" else ""
        line = (
            f"arvo:{outcome.arvo_id} [{(outcome.task_id or '-')[:8]}] {outcome.status}"
            f" steps={outcome.steps} {score if s else ''}{why}"
        )
        self.console.print(escape(line.rstrip()), highlight=False, soft_wrap=True)

    def _refused(self, arvo_id: str, reason: str, end_reason: str = "rejected") -> None:
        self._record(
            Outcome(
                arvo_id=arvo_id,
                status="failed",
                failure_kind="infra",
                end_reason=end_reason,
                error=reason,
            )
        )

    async def one(self, raw_id: str) -> None:
        arvo_id, bad = canonical_id(raw_id)
        if bad:
            self._refused(arvo_id, bad)
            return
        if self.stop.is_set():
            return
        self.view.update(arvo_id, status="submitting")
        body = {
            "task": f"arvo:{arvo_id}",
            "purple_url": self.cfg.purple,
            "max_steps": self.cfg.max_steps,
            "task_timeout_s": self.cfg.task_timeout_s,
            "command_timeout_s": self.cfg.command_timeout_s,
        }
        try:
            resp = await self._request(
                "POST", "/tasks", json={k: v for k, v in body.items() if v is not None}
            )
        except httpx.HTTPError as exc:
            self._refused(arvo_id, f"POST /tasks failed: {type(exc).__name__}: {exc}", "error")
            return
        if resp.status_code >= 400:
            self._refused(
                arvo_id, f"green refused the task (HTTP {resp.status_code}): {_detail(resp)}"
            )
            return
        task = resp.json()
        task_id = task["id"]
        self.in_flight[arvo_id] = task_id
        self.session.submitted.append(arvo_id)
        try:
            task = await self._follow(arvo_id, task)
            await self._finish(arvo_id, task)
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            self._record(
                Outcome(
                    arvo_id=arvo_id,
                    task_id=task_id,
                    status="failed",
                    failure_kind="infra",
                    end_reason="error",
                    error=f"lost track of the task on green: {type(exc).__name__}: {exc}",
                )
            )
        finally:
            self.in_flight.pop(arvo_id, None)

    async def _follow(self, arvo_id: str, task: dict[str, Any]) -> dict[str, Any]:
        """Poll until the task ends; on a stop request cancel it on green and return its state
        after the cancel."""
        while True:
            self.view.update(
                arvo_id,
                status=task.get("status", "?"),
                task_id=task["id"],
                steps=int(task.get("steps") or 0),
                cost=float(task.get("cost") or 0),
            )
            if task.get("status") in TERMINAL:
                return task
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.cfg.poll_interval_s)
            if self.stop.is_set():
                return await self._cancel(task)
            task = await self._get_task(task["id"])

    async def _cancel(self, task: dict[str, Any]) -> dict[str, Any]:
        task_id = task["id"]
        try:
            await self._request("POST", f"/tasks/{task_id}/cancel", retry=False)
            for _ in range(20):
                task = (await self._request("GET", f"/tasks/{task_id}", retry=False)).json()
                if task.get("status") in TERMINAL:
                    break
                await asyncio.sleep(0.25)
        except (httpx.HTTPError, ValueError) as exc:
            task = {
                **task,
                "error": task.get("error") or f"could not cancel on green: {exc}",
                "_unreachable": True,
            }
        return task

    async def _finish(self, arvo_id: str, task: dict[str, Any]) -> None:
        if task.pop("_unreachable", False):
            return  # green's verdict is unknown: leave the id pending, a resume runs it again
        name = task_dir_name(arvo_id, task["id"])
        tdir = self.run_dir / "tasks" / name
        write_json_atomic(tdir / "task.json", task)
        commands, note_c = await self._commands(task["id"])
        write_json_atomic(tdir / "commands.json", commands)
        trajectory, note_t = await self._trajectory(task)
        if trajectory is not None:
            write_json_atomic(tdir / "trajectory.json", trajectory)
        outcome = outcome_from_task(task, task_dir=f"tasks/{name}")
        outcome.arvo_id = arvo_id
        outcome.trajectory = trajectory is not None
        outcome.notes += [n for n in (note_c, note_t) if n]
        if self.stop.is_set() and task.get("status") != "completed":
            outcome.notes.append("cancelled by the CLI (interrupted)")
        self._record(outcome)

    # ---- the whole batch ------------------------------------------------------------------

    async def run(self, ids: list[str]) -> None:
        sem = asyncio.Semaphore(self.cfg.concurrency)

        async def worker(raw_id: str) -> None:
            async with sem:
                if self.stop.is_set():
                    return
                try:
                    await self.one(raw_id)
                except GreenUnreachable as exc:
                    self.abort = self.abort or exc
                    self.stop.set()
                except Exception as exc:  # an unexpected answer: record it, the run goes on
                    self._record(
                        Outcome(
                            arvo_id=canonical_id(raw_id)[0],
                            status="failed",
                            failure_kind="infra",
                            end_reason="error",
                            error=f"CLI error: {type(exc).__name__}: {exc}",
                        )
                    )

        await asyncio.gather(*(worker(i) for i in ids))


def _detail(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300] or resp.reason_phrase
    if isinstance(data, dict):
        detail = data.get("detail", data)
        if data.get("errors"):
            detail = f"{detail}: " + "; ".join(
                f"{e.get('where')}: {e.get('message')}"
                for e in data["errors"]
                if isinstance(e, dict)
            )
        return str(detail)
    return str(data)


async def check_green(client: httpx.AsyncClient, green: str) -> str | None:
    """None when green answers (a warning string when it says it is degraded); raises
    :class:`GreenUnreachable` when nothing answers."""
    try:
        resp = await client.get(green.rstrip("/") + "/healthz", timeout=10)
    except httpx.HTTPError as exc:
        raise GreenUnreachable(
            f"green is not reachable at {green} ({type(exc).__name__}: {exc})"
        ) from exc
    if resp.status_code == 503:
        return f"green reports it is degraded: {resp.text[:300]}"
    return None


async def run_batch(
    cfg: RunConfig,
    results: RunResults,
    run_dir: Path,
    todo: list[str],
    session: Session,
    console: Console,
    done: int,
) -> int:
    """Run the ids in ``todo``; returns the exit code. Ctrl-C once: cancel the tasks in flight
    on green and record them; twice: stop at once (what was recorded stays)."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    view = LiveView(total=len(results.task_ids), done=done)
    timeout = httpx.Timeout(30.0, connect=10.0)
    auth = GreenAuth(cfg.green, cfg.api_token)
    async with httpx.AsyncClient(timeout=timeout, trust_env=False, auth=auth) as client:
        warning = await check_green(client, cfg.green)
        if warning:
            console.print(f"[yellow]warning:[/] {escape(warning)}")
        batch = Batch(cfg, results, run_dir, session, view, console, client)
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
            with Live(view, console=console, refresh_per_second=4, transient=False):
                await batch.run(todo)
        except asyncio.CancelledError:
            session.interrupted = True
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
    if batch.abort is not None:
        session.error = str(batch.abort)
        console.print(f"[red]error:[/] {escape(str(batch.abort))}")
        return EXIT_GREEN_UNREACHABLE
    return EXIT_INTERRUPTED if session.interrupted else 0


# ---- commands -----------------------------------------------------------------------------


def _summary(results: RunResults, console: Console) -> None:
    agg = results.aggregate
    table = Table(title=f"run {results.run}: {len(results.tasks)}/{len(results.task_ids)} ended")
    table.add_column("mean over")
    table.add_column("n", justify="right")
    for m in METRICS:
        table.add_column(m, justify="right")
    for label, key in (("all tasks", "mean_all"), ("non-infra", "mean_non_infra")):
        means = agg.get(key) or {}
        table.add_row(
            label, str(means.get("n", 0)), *(f"{float(means.get(m, 0)):.3f}" for m in METRICS)
        )
    console.print(table)
    for line in agg.get("explanation", []):
        console.print(f"  {line}", highlight=False)


def _default_run_name() -> str:
    return datetime.now().strftime("run-%Y%m%d-%H%M%S")


@app.command()
def run(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="ARVO ids: 10055, arvo:10055 (space or comma separated).", show_default=False
        ),
    ] = None,
    ids_file: Annotated[
        Path | None,
        typer.Option(
            "--ids-file",
            exists=True,
            dir_okay=False,
            readable=True,
            help="File of ids (whitespace/comma separated, '#' comments).",
        ),
    ] = None,
    green: Annotated[
        str, typer.Option(envvar="ARENA_GREEN_URL", help="Green's base URL.")
    ] = "http://127.0.0.1:9009",
    purple: Annotated[
        str | None,
        typer.Option(
            help="Purple's A2A URL, sent to green with each task (default: green's configured "
            "purple). Also where the trajectory is fetched from."
        ),
    ] = None,
    purple_api: Annotated[
        str | None,
        typer.Option(
            "--purple-api",
            help="Where this CLI reaches purple's REST when that differs from "
            "--purple (e.g. green reaches purple by a compose host name).",
        ),
    ] = None,
    run_name: Annotated[
        str | None,
        typer.Option("--run", help="Run name: the folder under --out (default: run-<timestamp>)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    concurrency: Annotated[int, typer.Option(min=1, help="Tasks in flight at once.")] = 4,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Command limit per task (default: green's).")
    ] = None,
    task_timeout: Annotated[
        float | None, typer.Option(min=1, help="Deadline per task in seconds (default: green's).")
    ] = None,
    command_timeout: Annotated[
        float | None, typer.Option(min=1, help="Timeout per command in seconds (default: green's).")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume/--no-resume",
            help="Continue an existing run: keep completed ids, run the "
            "others. --no-resume starts the run over.",
        ),
    ] = True,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="On resume, run failed ids again too.")
    ] = False,
    poll_interval: Annotated[
        float, typer.Option(min=0.01, help="Seconds between polls of a task.")
    ] = 2.0,
    green_grace: Annotated[
        float,
        typer.Option(
            min=0, help="Seconds green may be unreachable mid-run before the run stops (exit 2)."
        ),
    ] = 60.0,
    api_token: Annotated[
        str | None,
        typer.Option(
            envvar="ARENA_API_TOKEN",
            show_default=False,
            help="Green's operator token (never saved). Default: GREEN_API_TOKEN, else the file "
            "GREEN_API_TOKEN_FILE, data/operator-token or data/compose/operator-token.",
        ),
    ] = None,
    sample_n: Annotated[
        int | None,
        typer.Option(
            "--sample",
            min=1,
            help="Run N ids drawn with --seed (from the ids given, "
            "else from every id green's source lists).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    verified_only: Annotated[
        bool, typer.Option("--verified-only", help="Leave out ids not verified on green.")
    ] = False,
) -> None:
    """Run ARVO tasks on green, follow them live, save results.json, the task logs and report.md.

    Ids already completed in an existing run folder are kept (--resume, the default); failed
    ids run again only with --retry-failed; cancelled (interrupted) ids and ids that never started
    because purple was unreachable always run again.
    Ctrl-C cancels the tasks in flight on green and saves what has ended (twice: stop at once).

    Exit codes: 0 the run ended (whatever the tasks' outcomes), 2 green unreachable or bad
    usage, 130 interrupted.
    """
    console = Console(highlight=False)
    wanted = split_ids(
        [*(ids or []), *([ids_file.read_text(encoding="utf-8")] if ids_file else [])]
    )
    wanted = list(dict.fromkeys(canonical_id(i)[0] for i in wanted))
    wanted = narrow_run_ids(green, api_token, wanted, sample_n, seed, verified_only)
    name = run_name or _default_run_name()
    if "/" in name or name in ("", ".", ".."):
        raise typer.BadParameter(f"not a folder name: {name!r}", param_hint="--run")
    run_dir = out / name
    path = run_dir / RESULTS_FILE
    args = {
        "ids": wanted,
        "ids_file": str(ids_file) if ids_file else None,
        "green": green,
        "purple": purple,
        "purple_api": purple_api,
        "run": name,
        "out": str(out),
        "concurrency": concurrency,
        "max_steps": max_steps,
        "task_timeout": task_timeout,
        "command_timeout": command_timeout,
        "resume": resume,
        "retry_failed": retry_failed,
        "poll_interval": poll_interval,
        "green_grace": green_grace,
        "sample": sample_n,
        "seed": seed,
        "verified_only": verified_only,
    }

    results: RunResults | None = None
    if path.exists() and resume:
        try:
            results = RunResults.load(path)
        except ValueError as exc:
            console.print(f"[red]error:[/] cannot read {path}: {escape(str(exc))}")
            raise typer.Exit(2) from exc
        if results.green.rstrip("/") != green.rstrip("/") or results.purple != purple:
            console.print(
                f"[yellow]note:[/] the run was started against green {results.green}, "
                f"purple {results.purple or '(default)'}; continuing with {green}, "
                f"{purple or '(default)'}"
            )
        results.green, results.purple = green, purple
    elif path.exists():
        console.print(
            f"[yellow]note:[/] --no-resume: starting {run_dir} over "
            "(earlier task folders are left in place)"
        )
    if results is None:
        results = RunResults(run=name, green=green, purple=purple)
    for arvo_id in wanted:
        if arvo_id not in results.task_ids:
            results.task_ids.append(arvo_id)
    if not results.task_ids:
        console.print(
            "[red]error:[/] no task ids: give ids, --ids-file, or --run of an existing run"
        )
        raise typer.Exit(2)

    write_split(run_dir, results.task_ids, args)
    todo = results.pending(retry_failed)
    skipped = len(results.task_ids) - len(todo)
    results.args = args
    results.finished_at = None
    session = Session(started_at=now_iso(), args=args)
    results.sessions.append(session)
    console.print(
        f"run [bold]{name}[/] → {run_dir}: {len(results.task_ids)} task(s), "
        f"{len(todo)} to run" + (f", {skipped} kept from earlier sessions" if skipped else "")
    )
    failed_kept = [
        o.arvo_id for o in results.tasks if o.status == "failed" and o.arvo_id not in todo
    ]
    if failed_kept:
        console.print(
            f"  {len(failed_kept)} failed id(s) kept (use --retry-failed to run them again)"
        )

    cfg = RunConfig(
        green=green,
        purple=purple,
        purple_api=purple_api,
        concurrency=concurrency,
        max_steps=max_steps,
        task_timeout_s=task_timeout,
        command_timeout_s=command_timeout,
        poll_interval_s=poll_interval,
        green_grace_s=green_grace,
        api_token=api_token or find_local_token(),
    )
    code = 0
    if todo:
        try:
            code = asyncio.run(run_batch(cfg, results, run_dir, todo, session, console, skipped))
        except GreenUnreachable as exc:
            results.sessions.pop()  # nothing happened: leave results.json as it was
            console.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(EXIT_GREEN_UNREACHABLE) from exc
        except KeyboardInterrupt:
            session.interrupted = True
            code = EXIT_INTERRUPTED
    session.finished_at = now_iso()
    if not results.pending(retry_failed=False):
        results.finished_at = session.finished_at
    results.refresh_aggregate()
    run_dir.mkdir(parents=True, exist_ok=True)
    results.save(path)
    report = render_report(results, run_dir)
    _summary(results, console)
    console.print(f"results: {path}\nreport:  {report}")
    if code == EXIT_INTERRUPTED:
        again = f"arena run --run {name} --out {out} --green {green}"
        again += f" --purple {purple}" if purple else ""
        console.print(f"interrupted: resume with  {again}", highlight=False, soft_wrap=True)
    if code:
        raise typer.Exit(code)


@app.command()
def report(
    run_dir: Annotated[
        Path, typer.Argument(help="A run folder (results/<run>) or its results.json.", exists=True)
    ],
) -> None:
    """Re-render report.md and scores.png from a run's results.json.

    The aggregate is recomputed from the recorded outcomes; results.json is not modified.
    """
    console = Console(highlight=False)
    if run_dir.is_file():
        run_dir = run_dir.parent
    path = run_dir / RESULTS_FILE
    if not path.exists():
        console.print(f"[red]error:[/] no {RESULTS_FILE} in {run_dir}")
        raise typer.Exit(2)
    try:
        results = RunResults.load(path)
    except ValueError as exc:
        console.print(f"[red]error:[/] cannot read {path}: {escape(str(exc))}")
        raise typer.Exit(2) from exc
    results.refresh_aggregate()
    out = render_report(results, run_dir)
    _summary(results, console)
    console.print(f"report: {out}")


if __name__ == "__main__":
    app()
