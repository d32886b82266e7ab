"""The demo's client side: wait for the stack, run one task over green's REST API, show it live.

    python scripts/demo_follow.py wait [--green URL] [--purple URL] [--timeout S]
    python scripts/demo_follow.py run  [--green URL] [--task arvo:900007] [--timeout S]

``wait`` returns when both services answer ``/healthz`` with 200 and prints purple's policy.
``run`` starts the task (``POST /tasks``), follows ``GET /tasks/<id>`` with a progress line
(status, steps, elapsed, last command) until the task ends, then prints the scores. Exit code:
0 when the task completed, 1 when it failed or was cancelled, 2 when the stack did not answer.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import httpx
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from services.green.kinds.arvo.scoring.metrics import METRICS
from services.shared.operator_token import find_local_token

TERMINAL = {"completed", "failed", "cancelled"}
STATUS_STYLE = {
    "queued": "dim",
    "preparing": "cyan",
    "running": "yellow",
    "evaluating": "magenta",
    "completed": "bold green",
    "failed": "bold red",
    "cancelled": "bold red",
}
POLICIES = {
    "stacktrace": "the offline stack-trace analyst (no OPENAI_API_KEY: no LLM is called)",
    "react": "the ReAct LLM agent (OPENAI_API_KEY is set)",
}

# Not a terminal (CI, a pipe): no live line, and 120 columns rather than 80 for the tables.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)


def wait_healthy(green: str, purple: str, timeout_s: float) -> dict[str, Any]:
    """Poll both /healthz until they answer 200; return purple's answer (it names the policy)."""
    deadline = time.monotonic() + timeout_s
    last: dict[str, str] = {}
    with httpx.Client(timeout=5) as http:
        while True:
            answers = {}
            for name, base in (("green", green), ("purple", purple)):
                try:
                    r = http.get(f"{base}/healthz")
                    answers[name] = r.json() if r.status_code == 200 else None
                    last[name] = f"{r.status_code} {r.text[:200]}"
                except (httpx.HTTPError, ValueError) as exc:
                    answers[name] = None
                    last[name] = f"{type(exc).__name__}: {exc}"
            if all(answers.values()):
                return {"green": answers["green"], "purple": answers["purple"]}
            if time.monotonic() > deadline:
                raise TimeoutError("; ".join(f"{k}: {v}" for k, v in last.items()))
            time.sleep(0.5)


def cmd_wait(args: argparse.Namespace) -> int:
    try:
        health = wait_healthy(args.green, args.purple, args.timeout)
    except TimeoutError as exc:
        console.print(f"[red]the services did not become healthy in {args.timeout:.0f} s:[/] {exc}")
        return 2
    g, p = health["green"], health["purple"]
    console.print(
        f"green   {args.green}  ok (docker: {g.get('docker')}, database: {g.get('database')})"
    )
    policy = p.get("policy", "?")
    console.print(
        f"purple  {args.purple}  ok, policy [bold]{policy}[/]: {POLICIES.get(policy, policy)}"
    )
    return 0


def _elapsed(start: float) -> str:
    s = int(time.monotonic() - start)
    return f"{s // 60}:{s % 60:02d}"


def _progress(task: dict[str, Any], start: float, last_command: str) -> Group:
    status = task["status"]
    line = Text.assemble(
        ("task ", "dim"),
        (task["id"][:8], "bold"),
        ("  arvo:", "dim"),
        task["arvo_id"],
        ("  status ", "dim"),
        (f"{status:<10}", STATUS_STYLE.get(status, "")),
        ("  steps ", "dim"),
        f"{task['steps']}/{task['max_steps']}",
        ("  elapsed ", "dim"),
        _elapsed(start),
    )
    parts: list[Any] = [line]
    if last_command:
        parts.append(Text(f"  $ {last_command}", style="dim", overflow="ellipsis", no_wrap=True))
    return Group(*parts)


def _last_command(http: httpx.Client, task_id: str, steps: int) -> str:
    try:
        cmds = http.get(f"/tasks/{task_id}/commands", params={"offset": max(steps - 1, 0)}).json()
    except (httpx.HTTPError, ValueError):
        return ""
    if not cmds:
        return ""
    return " ".join(cmds[-1]["command"].split())[:200]


def follow(http: httpx.Client, task: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Poll the task until it ends; a live line on a terminal, one line per change otherwise."""
    start = time.monotonic()
    steps_seen, last_cmd, last_printed = -1, "", ""
    live = (
        Live(_progress(task, start, ""), console=console, refresh_per_second=4, transient=False)
        if console.is_terminal
        else None
    )
    if live:
        live.start()
    try:
        while True:
            if task["steps"] != steps_seen:
                steps_seen = task["steps"]
                last_cmd = _last_command(http, task["id"], steps_seen) if steps_seen else ""
            if live:
                live.update(_progress(task, start, last_cmd))
            else:
                line = f"{task['status']} steps={task['steps']}"
                if line != last_printed:
                    console.print(f"[{_elapsed(start)}] {line}")
                    last_printed = line
            if task["status"] in TERMINAL:
                return task
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(
                    f"task {task['id']} still {task['status']} after {timeout_s:.0f} s"
                )
            time.sleep(0.5)
            r = http.get(f"/tasks/{task['id']}")
            r.raise_for_status()
            task = r.json()
    finally:
        if live:
            live.stop()


def _yes(v: Any) -> str:
    return "[green]yes[/]" if v else "[red]no[/]"


def print_result(task: dict[str, Any]) -> None:
    status = task["status"]
    console.print()
    console.print(
        f"[{STATUS_STYLE.get(status, '')}]{status}[/]  end: {task.get('end_reason') or '-'}"
        f"  steps: {task['steps']}  tokens in/out: {task['tokens_in']}/{task['tokens_out']}"
        f"  cost: ${task['cost']:.4f}"
    )
    if task.get("error"):
        console.print(f"[red]error ({task.get('failure_kind') or '?'}):[/] {task['error']}")
    scores = task.get("scores")
    if not scores:
        console.print("[yellow]no scores[/]")
        return
    table = Table(title=f"Scores of arvo:{task['arvo_id']} (top 5 locations)", title_justify="left")
    for m in METRICS:
        table.add_column(m, justify="right")
    table.add_row(*(f"{float(scores.get(m, 0.0)):.2f}" for m in METRICS))
    console.print(table)
    locs = Table(title="Submitted locations", title_justify="left")
    # The three match columns are named apart from the location's own `function`.
    for col in (
        "rank",
        "location",
        "function",
        "file match",
        "function match",
        "line match",
        "iou",
    ):
        locs.add_column(col, justify="right" if col in ("rank", "iou") else "left")
    for loc in scores.get("locations", [])[:5]:
        span = f"{loc['normalized']}:{loc['line_start']}-{loc['line_end']}"
        locs.add_row(
            str(loc["rank"]),
            span,
            loc.get("function") or "-",
            _yes(loc["file_match"]),
            _yes(loc["function_match"]),
            _yes(loc["line_match"]),
            f"{loc['iou']:.2f}",
        )
    if locs.row_count:
        console.print(locs)
    truth = Table(
        title="Ground truth (the developer fix, changed lines of the vulnerable file)",
        title_justify="left",
    )
    truth.add_column("region")
    truth.add_column("found by")
    for region in scores.get("regions", []):
        found = region.get("line_matched_by") or region.get("overlapped_by") or []
        truth.add_row(region["label"], ", ".join(f"rank {r}" for r in found) or "[red]nobody[/]")
    if truth.row_count:
        console.print(truth)


def cmd_run(args: argparse.Namespace) -> int:
    token = find_local_token()
    if token is None:
        console.print("[red]no operator token:[/] set GREEN_API_TOKEN or GREEN_API_TOKEN_FILE")
        return 2
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=args.green, timeout=30, headers=headers) as http:
        try:
            r = http.post("/tasks", json={"task": args.task})
        except httpx.HTTPError as exc:
            console.print(f"[red]cannot reach green at {args.green}:[/] {exc}")
            return 2
        if r.status_code != 202:
            console.print(f"[red]POST /tasks answered {r.status_code}:[/] {r.text}")
            return 2
        task = r.json()
        console.print(
            f'POST {args.green}/tasks {{"task": "{args.task}"}} -> task [bold]{task["id"]}[/]'
        )
        console.print(f"watch it live in the dashboard: {args.green}/ui/tasks/{task['id']}")
        try:
            task = follow(http, task, args.timeout)
        except TimeoutError as exc:
            console.print(f"[red]{exc}[/]")
            return 1
    print_result(task)
    return 0 if task["status"] == "completed" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wait", help="wait until green and purple are healthy")
    w.add_argument("--green", default="http://127.0.0.1:9009")
    w.add_argument("--purple", default="http://127.0.0.1:9019")
    w.add_argument("--timeout", type=float, default=120.0)
    w.set_defaults(fn=cmd_wait)
    r = sub.add_parser("run", help="start one task and follow it to the end")
    r.add_argument("--green", default="http://127.0.0.1:9009")
    r.add_argument("--task", default="arvo:900007")
    r.add_argument("--timeout", type=float, default=1800.0)
    r.set_defaults(fn=cmd_run)
    args = parser.parse_args(argv)
    args.green = args.green.rstrip("/")
    if hasattr(args, "purple"):
        args.purple = args.purple.rstrip("/")
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
