"""``arena``: the typer app — ``arena run`` (a batch on green), ``arena report``, ``arena tasks``.

    arena run 10055 arvo:10096 --green http://127.0.0.1:9009 --run demo
    arena run swebench:django__django-11099 --green http://127.0.0.1:9009
    arena report results/demo

Tasks are named by reference, of any kind green offers (``services.arena.refs``: a bare number
is an ARVO id).

``arena export RUN --format atif`` writes a run's trajectories as ATIF v1.8, one file a task.

``run`` keeps ``results/<run>/results.json`` up to date after every task (an interrupted run
resumes where it stopped) and writes ``report.md`` with a ``scores.png`` at the end. See
``docs/cli.md``.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from services.arena import options as opt
from services.arena.atif_export import export_command
from services.arena.batch import (
    EXIT_GREEN_UNREACHABLE,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    RunConfig,
    run_batch,
)
from services.arena.client import GreenUnreachable, RunRefused
from services.arena.compare import compare_runs
from services.arena.compare_report import kinds_of, write_comparison
from services.arena.figures import bracket, p_value, signed
from services.arena.leaderboard import write_leaderboard
from services.arena.manifest import provenance_conflicts, refresh_audit, write_manifest
from services.arena.records import incomplete, repair_run
from services.arena.refs import split_refs, task_refs
from services.arena.report import render_report
from services.arena.results import RESULTS_FILE, RunResults, Session, Slot, now_iso
from services.arena.splits import named_split, split_names, write_split
from services.arena.summary import print_summary
from services.arena.tasks import tasks_app
from services.arena.tasks_client import narrow_run_ids
from services.shared.operator_token import find_local_token
from services.shared.task_ref import TaskRef

app = typer.Typer(
    name="arena",
    help="Batch runs of tasks (ARVO, SWE-bench, any kind green offers) against a running green, "
    "and their reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's help: wraps to any width (rich's panels cramp at 80)
)
app.add_typer(tasks_app, name="tasks")
app.command("export")(export_command)


def _run_dir(out: Path, run_name: str | None) -> tuple[str, Path]:
    name = run_name or datetime.now().strftime("run-%Y%m%d-%H%M%S")
    if "/" in name or name in ("", ".", ".."):
        raise typer.BadParameter(f"not a folder name: {name!r}", param_hint="--run")
    return name, out / name


def _load(path: Path, console: Console) -> RunResults:
    try:
        return RunResults.load(path)
    except ValueError as exc:
        console.print(f"[red]error:[/] cannot read {path}: {escape(str(exc))}")
        raise typer.Exit(2) from exc


def _open_results(
    path: Path, resume: bool, name: str, green: str, purple: str | None, console: Console
) -> RunResults:
    """The run's results: resumed from ``path``, or new."""
    if path.exists() and resume:
        results = _load(path, console)
        if results.green.rstrip("/") != green.rstrip("/") or results.purple != purple:
            console.print(
                f"[yellow]note:[/] the run was started against green {results.green}, "
                f"purple {results.purple or '(default)'}; continuing with {green}, "
                f"{purple or '(default)'}"
            )
        results.green, results.purple = green, purple
        return results
    if path.exists():
        console.print(
            f"[yellow]note:[/] --no-resume: starting {path.parent} over "
            "(earlier task folders are left in place)"
        )
    return RunResults(run=name, green=green, purple=purple)


def _config(args: dict[str, Any], api_token: str | None) -> RunConfig:
    return RunConfig(
        green=args["green"],
        purple=args["purple"],
        concurrency=args["concurrency"],
        max_steps=args["max_steps"],
        task_timeout_s=args["task_timeout"],
        command_timeout_s=args["command_timeout"],
        poll_interval_s=args["poll_interval"],
        green_grace_s=args["green_grace"],
        complete_wait_s=args["complete_wait"],
        api_token=api_token,
    )


def _start_session(
    results: RunResults, run_dir: Path, args: dict[str, Any], retry_failed: bool, console: Console
) -> tuple[list[Slot], Session]:
    """Add the wanted references, write the run's split, open a session; the attempts to run
    now."""
    for ref in args["ids"]:
        results.add(TaskRef.parse(ref))
    if not results.task_ids:
        console.print(
            "[red]error:[/] no task ids: give ids, --ids-file, or --run of an existing run"
        )
        raise typer.Exit(2)
    if args.get("trials"):
        results.trials = max(results.trials, int(args["trials"]))
    todo = results.pending(retry_failed)
    skipped = len(results.slots()) - len(todo)
    results.args = args
    results.finished_at = None
    session = Session(started_at=now_iso(), args=args)
    results.sessions.append(session)
    console.print(
        f"run [bold]{args['run']}[/] → {run_dir}: "
        f"{len(results.task_ids)} task(s)"
        + (f" x {results.trials} trials" if results.trials > 1 else "")
        + f", {len(todo)} to run"
        + (f", {skipped} kept from earlier sessions" if skipped else "")
    )
    kept = [o.label for o in results.tasks if o.status == "failed" and o.slot not in todo]
    if kept:
        console.print(f"  {len(kept)} failed id(s) kept (use --retry-failed to run them again)")
    return todo, session


def _execute(
    cfg: RunConfig,
    results: RunResults,
    run_dir: Path,
    todo: list[Slot],
    session: Session,
    console: Console,
) -> int:
    """Run the batch; the exit code. Green unreachable at the start: nothing is recorded."""
    if not todo:
        return 0
    skipped = len(results.slots()) - len(todo)
    try:
        return asyncio.run(run_batch(cfg, results, run_dir, todo, session, console, skipped))
    except GreenUnreachable as exc:
        results.sessions.pop()  # nothing happened: leave results.json as it was
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_GREEN_UNREACHABLE) from exc
    except RunRefused as exc:  # nothing started: nothing is recorded, no mean counts them
        _refused(exc, console)
        raise typer.Exit(EXIT_REFUSED) from exc
    except KeyboardInterrupt:
        session.interrupted = True
        return EXIT_INTERRUPTED


def _refused(exc: RunRefused, console: Console) -> None:
    """Say which tasks green refused, and green's word on how to get each."""
    if not exc.unknown:
        console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
    else:
        console.print(
            f"[red]error:[/] green does not know {len(exc.unknown)} of the run's tasks, so "
            "the run did not start:"
        )
        for u in exc.unknown:
            console.print(f"  {escape(str(u.get('task')))}: {escape(str(u.get('reason')))}")
    console.print(
        "Nothing was started or recorded. Build or fetch the tasks named above (the bundled "
        "fixtures: uv run python -m fixtures.build; real ARVO ids: arena tasks prefetch), or "
        "leave them out, then run again.",
        soft_wrap=True,
    )


def _close(
    results: RunResults, session: Session, run_dir: Path, code: int, console: Console
) -> None:
    """Save results.json and the report, print the summary (and how to resume)."""
    session.finished_at = now_iso()
    if not results.pending(retry_failed=False):
        results.finished_at = session.finished_at
    results.refresh_aggregate()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_split(run_dir, results.task_ids, results.args)
    results.save(run_dir / RESULTS_FILE)
    write_manifest(results, run_dir)
    write_leaderboard(results, run_dir)
    report = render_report(results, run_dir)
    print_summary(results, console)
    console.print(f"results: {run_dir / RESULTS_FILE}\nreport:  {report}")
    if results.green_run:
        console.print(
            f"on green's dashboard: {results.green.rstrip('/')}/ui/runs/{results.green_run}"
        )
    if code == EXIT_INTERRUPTED:
        args = results.args
        again = f"arena run --run {args['run']} --out {args['out']} --green {args['green']}"
        again += f" --purple {args['purple']}" if args.get("purple") else ""
        console.print(f"interrupted: resume with  {again}", highlight=False, soft_wrap=True)


def _wanted(
    ids: list[str] | None, ids_file: Path | None, split: str | None, console: Console
) -> list[str]:
    """The references given as arguments, in an ids file and by a named split (exit 2, with
    a sentence each, for what is not one)."""
    given = [*(ids or []), *([ids_file.read_text(encoding="utf-8")] if ids_file else [])]
    try:
        given += [named_split(split)] if split else []
    except ValueError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from exc
    refs, bad = task_refs(split_refs(given))
    if bad:
        for why in bad:
            console.print(f"[red]error:[/] {escape(why)}", soft_wrap=True)
        raise typer.Exit(2)
    return [str(r) for r in refs]


@app.command()
def run(
    ids: opt.Ids = None,
    ids_file: opt.IdsFile = None,
    split: opt.SplitName = None,
    green: opt.Green = "http://127.0.0.1:9009",
    purple: opt.Purple = None,
    purple_api: opt.PurpleApi = None,
    run_name: opt.RunName = None,
    out: opt.Out = Path("results"),
    concurrency: opt.Concurrency = 4,
    max_steps: opt.MaxSteps = None,
    task_timeout: opt.TaskTimeout = None,
    command_timeout: opt.CommandTimeout = None,
    resume: opt.Resume = True,
    retry_failed: opt.RetryFailed = False,
    poll_interval: opt.PollInterval = 2.0,
    green_grace: opt.GreenGrace = 60.0,
    complete_wait: opt.CompleteWait = 600.0,
    api_token: opt.ApiToken = None,
    sample_n: opt.Sample = None,
    seed: opt.Seed = 0,
    verified_only: opt.VerifiedOnly = False,
    trials: opt.Trials = 1,
) -> None:
    """Run tasks on green, follow them live, save results.json, the task logs and report.md.

    Tasks are references of any kind green offers (arvo:10055, swebench:<instance>; a bare
    number is an ARVO id); green's answer gives the canonical form the run records.

    Ids already completed in an existing run folder are kept (--resume, the default); failed
    ids run again only with --retry-failed; cancelled (interrupted) ids and ids that never started
    because purple was unreachable always run again.

    Ctrl-C cancels the tasks in flight on green and saves what has ended (twice: stop at once).

    Exit codes: 0 the run ended with at least one attempt completed, 1 none of the attempts run
    now completed, 2 green unreachable or bad usage, 4 green refused tasks it does not know
    (nothing started), 130 interrupted.
    """
    console = Console(highlight=False)
    if purple_api:
        console.print(
            "[yellow]note:[/] --purple-api is deprecated and ignored: trajectories now come "
            "through green (GET /tasks/{id}/trajectory), which reaches purple itself"
        )
    wanted = _wanted(ids, ids_file, split, console)
    wanted = narrow_run_ids(green, api_token, wanted, sample_n, seed, verified_only)
    name, run_dir = _run_dir(out, run_name)
    args = {
        "ids": wanted,
        "ids_file": str(ids_file) if ids_file else None,
        "split": split,
        "green": green,
        "purple": purple,
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
        "complete_wait": complete_wait,
        "sample": sample_n,
        "seed": seed,
        "verified_only": verified_only,
        "trials": trials,
    }
    results = _open_results(run_dir / RESULTS_FILE, resume, name, green, purple, console)
    todo, session = _start_session(results, run_dir, args, retry_failed, console)
    cfg = _config(args, api_token or find_local_token())
    code = _execute(cfg, results, run_dir, todo, session, console)
    _close(results, session, run_dir, code, console)
    if code:
        raise typer.Exit(code)


def _repair(
    results: RunResults, run_dir: Path, green: str, token: str | None, console: Console
) -> None:
    """Fetch from green what it withheld from the run's records; save the ones completed and
    say which are not."""
    todo = sum(1 for o in results.tasks if incomplete(o, unknown=True))
    if not todo:
        return
    try:
        why = repair_run(results, run_dir, green, token)
    except GreenUnreachable as exc:
        console.print(
            f"[yellow]note:[/] {todo} record(s) not known whole, and green could not be asked "
            f"for them: {escape(str(exc))}"
        )
        return
    results.refresh_aggregate()
    results.save(run_dir / RESULTS_FILE)
    if len(why) < todo:
        console.print(f"{todo - len(why)} record(s) fetched again from green at {green}")
    for label, reason in why.items():
        console.print(f"  still incomplete: {escape(label)}: {escape(reason)}", soft_wrap=True)


@app.command("split")
def split_cmd(
    name: Annotated[
        str | None, typer.Argument(help="A named split (none: list them).", show_default=False)
    ] = None,
) -> None:
    """Print a named split's task references, one a line (arena run --split NAME runs them);
    without a name, list the named splits with their sizes and what they are."""
    if name is None:
        for known in split_names():
            text = named_split(known)
            about = next((ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")), "")
            print(f"{known}\t{len(split_refs([text]))}\t{about}")
        return
    try:
        text = named_split(name)
    except ValueError as exc:
        Console(stderr=True).print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from exc
    for ref in split_refs([text]):
        print(ref)


@app.command()
def report(
    run_dir: opt.RunDir,
    force: opt.ReportForce = False,
    green: opt.ReportGreen = None,
    api_token: opt.ApiToken = None,
    offline: opt.Offline = False,
) -> None:
    """Re-render report.md and scores.png from a run's results.json.

    Records green showed only in part (their bug had other tasks unfinished) are fetched again
    from green first, and saved in results.json when they are now whole (--offline: not);
    report.md lists what is still missing. The aggregate is recomputed from the recorded
    outcomes. Refused (unless --force) when the trials of a task were scored with different
    scoring rules or image digests.
    """
    console = Console(highlight=False)
    if run_dir.is_file():
        run_dir = run_dir.parent
    path = run_dir / RESULTS_FILE
    if not path.exists():
        console.print(f"[red]error:[/] no {RESULTS_FILE} in {run_dir}")
        raise typer.Exit(2)
    results = _load(path, console)
    if not offline:
        _repair(results, run_dir, green or results.green, api_token or find_local_token(), console)
    problems = provenance_conflicts([(run_dir, results)])
    if problems and not force:
        for p in problems:
            console.print(f"[red]refused:[/] {escape(p)}", soft_wrap=True)
        console.print("(use --force to report it anyway)")
        raise typer.Exit(3)
    results.refresh_aggregate()
    refresh_audit(results, run_dir)
    write_manifest(results, run_dir)
    write_leaderboard(results, run_dir)
    out = render_report(results, run_dir)
    print_summary(results, console)
    console.print(f"report: {out}")


@app.command()
def compare(
    run_dirs: opt.RunDirs,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for compare.md/.json/.png (default: beside the runs)."),
    ] = None,
    force: opt.Force = False,
) -> None:
    """Compare runs on the tasks they all scored: the first run against each other one.

    Per metric: the difference with the 95% interval and p-value of one sign-flip test (the
    interval excludes 0 exactly when p < 0.05), win/loss/tie; every task not scored by both runs
    is listed apart with each side's reason. Runs whose scoring rule, image, assets or ground
    truth differ for a task, or that record no provenance, are refused unless --force.
    """
    console = Console(highlight=False)
    runs = []
    for d in run_dirs:
        d = d.parent if d.is_file() else d
        if not (d / RESULTS_FILE).exists():
            console.print(f"[red]error:[/] no {RESULTS_FILE} in {d}")
            raise typer.Exit(2)
        results = _load(d / RESULTS_FILE, console)
        results.refresh_aggregate()
        runs.append((d, results))
    if len(runs) < 2:
        console.print("[red]error:[/] give at least two run folders")
        raise typer.Exit(2)
    problems = provenance_conflicts([(d, r) for d, r in runs])
    if problems and not force:
        for p in problems:
            console.print(f"[red]refused:[/] {escape(p)}", soft_wrap=True)
        console.print("(use --force to compare them anyway)")
        raise typer.Exit(3)
    try:
        cmp = compare_runs([r for _, r in runs])
    except ValueError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    if problems:
        cmp["forced_despite"] = problems
    target = out or runs[0][0].parent / ("compare-" + "-vs-".join(r.run for _, r in runs))
    md = write_comparison(cmp, target)
    for kind, one in kinds_of(cmp).items():
        top = (one["metrics"] or ["-"])[0]
        of = f" ({kind} tasks)" if kind else ""
        for pair in one["pairs"]:
            m = pair["metrics"].get(top) or {"difference": {"mean": None}}
            d = m["difference"]
            line = (  # escaped: "[n/a: ...]" is not Rich markup
                f"{pair['a']} - {pair['b']} on {pair['n_common']} task(s){of}: {top} "
                f"{signed(d['mean'])} {bracket(d, 3, sign=True)}, p {p_value(d.get('p_value'))}, "
                f"win/loss/tie {m['win']}/{m['loss']}/{m['tie']}"
                if d["mean"] is not None
                else f"{pair['a']} - {pair['b']}{of}: no task scored by both"
            )
            console.print(escape(line))
    console.print(f"comparison: {md}")
