"""``arena tasks``: choose, prefetch and verify real ARVO tasks through green's REST API.

    arena tasks prefetch --sample 100 --seed 7 --dry-run     # how much disk a run needs
    arena tasks prefetch --from split.txt --jobs 4           # fetch assets, pull images
    arena tasks verify 900001 900002                         # certify tasks
    arena tasks verify --split flbench-900 --jobs 2          # certify a named split
    arena tasks images                                       # the image disk budget

Every command talks to green (``--green``, the operator token as for ``arena run``), so it
works against a remote green. See docs/datasets.md.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from services.arena.options import SplitName
from services.arena.tasks_client import GreenError, console, green_client, select_refs

tasks_app = typer.Typer(
    help="Choose, prefetch and verify ARVO tasks on a green (real datasets).",
    no_args_is_help=True,
    rich_markup_mode=None,  # as the arena app's
)
EXIT_NOT_VERIFIED = 1

GreenOpt = Annotated[str, typer.Option(envvar="ARENA_GREEN_URL", help="Green's base URL.")]
TokenOpt = Annotated[
    str | None,
    typer.Option(envvar="ARENA_API_TOKEN", show_default=False, help="Green's operator token."),
]
RefsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Task references: arvo:10055 (or 10055).", show_default=False),
]
FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from", exists=True, dir_okay=False, help="File of task references (a split file)."
    ),
]
SampleOpt = Annotated[
    int | None,
    typer.Option(
        "--sample", min=1, help="Draw N ids (from --from, else every id green's source lists)."
    ),
]
SeedOpt = Annotated[int, typer.Option(help="Seed of --sample: same seed, same tasks.")]
JobsOpt = Annotated[int, typer.Option(min=1, max=64, help="Tasks handled at once.")]


def for_each(
    ids: list[str], jobs: int, what: str, work: Callable[[str], dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Run ``work`` per id, ``jobs`` at once, under a progress bar; an error is recorded as
    ``{"error": ...}`` for that id."""
    results: dict[str, dict[str, Any]] = {}
    columns = (TextColumn(f"{what} [bold]{{task.fields[last]}}"), BarColumn(), MofNCompleteColumn())
    with (
        Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        bar = progress.add_task(what, total=len(ids), last="")
        futures = {pool.submit(work, ref): ref for ref in ids}
        for fut in as_completed(futures):
            ref = futures[fut]
            try:
                results[ref] = fut.result()
            except GreenError as exc:
                results[ref] = {"ref": ref, "error": str(exc)}
            progress.update(bar, advance=1, last=ref)
    return {ref: results[ref] for ref in ids}


def _size(n: int | None) -> str:
    if n is None:
        return "unknown"
    if n < 0:
        return "missing"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def _prefetch_table(results: dict[str, dict[str, Any]], dry_run: bool) -> tuple[Table, int]:
    table = Table("task", "assets", "image", "status", title="prefetch" + (" (dry run)" * dry_run))
    assets_total = 0
    for ref, r in results.items():
        if r.get("error"):
            table.add_row(ref, "", "", f"[red]{escape(r['error'])}")
            continue
        files = r["files"]
        need = sum(f["bytes"] or 0 for f in files.values() if not (dry_run and f["cached"]))
        assets_total += need
        image = r["image"]
        img = _size(image["bytes"]) if image["present"] else "unknown (not pulled)"
        status = "cached" if all(f["cached"] for f in files.values()) else "to fetch"
        if not dry_run:
            status = "pulled" if image.get("pulled") else "ready"
        table.add_row(ref, _size(need), img, status)
    return table, assets_total


@tasks_app.command("prefetch")
def prefetch_cmd(
    refs: RefsArg = None,
    from_file: FromOpt = None,
    split: SplitName = None,
    n: SampleOpt = None,
    seed: SeedOpt = 0,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what it needs.")] = False,
    jobs: JobsOpt = 4,
    green: GreenOpt = "http://127.0.0.1:9009",
    api_token: TokenOpt = None,
) -> None:
    """Fetch tasks' assets into green's cache and pull their images on green's engine.

    Resumable: cached files and present images are only checked. --dry-run says how much it
    would download (HTTP HEAD sizes; an image not pulled yet is unknown)."""
    with green_client(green, api_token) as client:
        ids = select_refs(client, refs or [], from_file, n, seed, split)
        results = for_each(
            ids,
            jobs,
            "prefetch",
            lambda ref: client.call(
                "POST", "/datasets/prefetch", json={"task": ref, "dry_run": dry_run}
            ),
        )
    table, assets_total = _prefetch_table(results, dry_run)
    console.print(table)
    failed = [r for r, v in results.items() if v.get("error")]
    images = [v["image"] for v in results.values() if not v.get("error")]
    unknown = sum(1 for i in images if not i["present"])
    on_engine = sum(i["bytes"] or 0 for i in images if i["present"])
    verb = "of assets to download" if dry_run else "of assets in the cache"
    console.print(
        f"{len(ids)} task(s): {_size(assets_total)} {verb}; images: {_size(on_engine)} on the engine"
        + (f", {unknown} to pull (size unknown until pulled)" if unknown else "")
        + (f"; [red]{len(failed)} failed[/]: {', '.join(failed)}" if failed else "")
    )
    if failed:
        raise typer.Exit(EXIT_NOT_VERIFIED)


def _verify_table(results: dict[str, dict[str, Any]]) -> Table:
    table = Table("task", "verified", "reproduce s", "fix s", "total s", title="verify")
    table.add_column("reason", overflow="fold")
    for ref, r in results.items():
        if r.get("error"):
            table.add_row(ref, "[red]error", "", "", "", escape(r["error"]))
            continue
        steps = {s["name"]: s for s in r["steps"]}

        def secs(name: str, steps: dict = steps) -> str:
            return f"{steps[name]['seconds']:.1f}" if name in steps else "-"

        mark = "[green]yes" if r["verified"] else "[red]no"
        reason = escape(r.get("reason") or "")
        table.add_row(ref, mark, secs("reproduce"), secs("fix"), f"{r['seconds']:.1f}", reason)
    return table


@tasks_app.command("verify")
def verify_cmd(
    refs: RefsArg = None,
    from_file: FromOpt = None,
    split: SplitName = None,
    n: SampleOpt = None,
    seed: SeedOpt = 0,
    jobs: JobsOpt = 1,
    green: GreenOpt = "http://127.0.0.1:9009",
    api_token: TokenOpt = None,
) -> None:
    """Certify tasks: the image reproduces error.txt's crash (sanitizer class and top project
    frame), patch.diff + arvo compile stop it, the ground truth lies in code.

    Results are stored in green (per task and image digest). Exit 1 when any is not verified."""
    with green_client(green, api_token) as client:
        ids = select_refs(client, refs or [], from_file, n, seed, split)
        results = for_each(
            ids,
            jobs,
            "verify",
            lambda ref: client.call("POST", "/datasets/verify", json={"task": ref}),
        )
    console.print(_verify_table(results))
    bad = [r for r, v in results.items() if not v.get("verified")]
    console.print(
        f"{len(ids) - len(bad)}/{len(ids)} verified" + (f"; not: {', '.join(bad)}" if bad else "")
    )
    if bad:
        raise typer.Exit(EXIT_NOT_VERIFIED)


@tasks_app.command("images")
def images_cmd(
    enforce: Annotated[bool, typer.Option("--enforce", help="Apply the budget now.")] = False,
    green: GreenOpt = "http://127.0.0.1:9009",
    api_token: TokenOpt = None,
) -> None:
    """Task images on green's engines (least recently used first) and the disk budget."""
    with green_client(green, api_token) as client:
        removed = client.call("POST", "/datasets/images/enforce")["removed"] if enforce else []
        state = client.call("GET", "/datasets/images")
    engines: dict[str, dict] = state.get("engines") or {}
    several = len(engines) > 1
    table = Table(title="task images (LRU first)")
    table.add_column("image", overflow="fold")
    if several:
        table.add_column("engine")
    table.add_column("size")
    table.add_column("last used (UTC)")
    for img in state["task_images"]:
        where = [img.get("engine", "")] if several else []
        table.add_row(img["tag"], *where, _size(img["size"]), (img["last_used"] or "never")[:19])
    console.print(table)
    budget = (
        f"{state['budget_gb']:.2f} GB" if state["budget_gb"] else "none (GREEN_IMAGE_BUDGET_GB)"
    )
    over = " [red](over budget: images in use are kept)[/]" if state["over"] else ""
    console.print(
        f"{state['images']} task image(s), {state['used_gb']:.2f} GB; "
        f"budget {budget}{' per engine' if several else ''}{over}"
    )
    for name, figures in engines.items() if several else ():
        mark = " [red](over)[/]" if figures["over"] else ""
        console.print(f"  {name}: {figures['images']} image(s), {figures['used_gb']:.2f} GB{mark}")
    for tag in removed:
        console.print(f"removed {tag}")


@tasks_app.command("sample")
def sample_cmd(
    n: Annotated[int, typer.Argument(min=1, help="How many ids.")],
    seed: SeedOpt = 0,
    from_file: FromOpt = None,
    split: SplitName = None,
    green: GreenOpt = "http://127.0.0.1:9009",
    api_token: TokenOpt = None,
) -> None:
    """Print a seeded split (one id a line): the same N, seed and population give the same ids."""
    with green_client(green, api_token) as client:
        ids = select_refs(client, [], from_file, n, seed, split)
    for ref in ids:
        print(ref)
