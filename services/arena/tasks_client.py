"""Green's dataset routes, synchronously: the client of ``arena tasks`` and of ``arena run
--sample/--verified-only``, and how the ids to work on are chosen."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import typer
from rich.console import Console
from rich.markup import escape

from services.arena.refs import read_refs, task_ref, task_refs
from services.arena.splits import named_split, sample
from services.shared.http import client as http_client
from services.shared.operator_token import find_local_token
from services.shared.task_ref import TaskRef

console = Console(highlight=False)
EXIT_USAGE = 2


class GreenError(Exception):
    """Green refused or could not be reached; the message says why."""


class Green:
    """A small synchronous client of green's dataset routes."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 3600.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = url.rstrip("/")
        self.http = http_client(
            base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout_s, connect=10)
        )

    def call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise GreenError(f"green at {self.url} did not answer: {exc}") from exc
        if r.status_code >= 400:
            try:
                detail = r.json().get("detail", r.text)
            except ValueError:
                detail = r.text
            raise GreenError(f"{method} {path}: HTTP {r.status_code}: {detail}")
        return r.json()


@contextlib.contextmanager
def green_client(url: str, token: str | None) -> Iterator[Green]:
    green = Green(url, token or find_local_token())
    try:
        yield green
    except GreenError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc
    finally:
        green.http.close()


def select_refs(
    green: Green,
    refs: list[str],
    from_file: Path | None,
    n: int | None,
    seed: int,
    split: str | None = None,
) -> list[str]:
    """The task references to work on (canonical ``kind:id``): given ones, plus a file's and a
    named split's; ``--sample N`` draws N of them (or of every id green's source lists when none
    is given) with ``--seed``."""
    raw = list(refs) + (read_refs(from_file.read_text(encoding="utf-8")) if from_file else [])
    try:
        raw += read_refs(named_split(split)) if split else []
    except ValueError as exc:
        raise GreenError(str(exc)) from exc
    parsed, bad = task_refs(raw)
    if bad:
        raise GreenError("; ".join(bad))
    ids = [str(r) for r in parsed]
    if n is not None:
        population = ids or _listed(green)
        try:
            ids = sample(population, n, seed)
        except ValueError as exc:
            raise GreenError(str(exc)) from exc
    if not ids:
        raise GreenError("no task ids: give ids, --from FILE or --sample N")
    return ids


def _listed(green: Green) -> list[str]:
    """Every task green's source holds, as references (``GET /datasets/ids`` answers the ids
    within its ``kind``)."""
    listed = green.call("GET", "/datasets/ids")
    kind = listed.get("kind")  # None from a green before kinds: bare ids, the default kind
    refs, bad = task_refs(f"{kind}:{i}" if kind else str(i) for i in listed["ids"])
    if bad:
        raise GreenError("; ".join(bad))
    return [str(r) for r in refs]


def verified_subset(green: Green, ids: list[str]) -> list[str]:
    """The references whose newest verification says verified (order kept). Green's rows name
    the task by ``kind`` and its id within the kind (``ref``)."""
    ok: set[TaskRef] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        rows = green.call("GET", "/datasets/verifications", params={"task": chunk})
        ok |= {TaskRef(row["kind"], row["ref"]) for row in rows if row["verified"]}
    return [r for r in ids if task_ref(r) in ok]


def narrow_run_ids(
    url: str, token: str | None, ids: list[str], n: int | None, seed: int, verified_only: bool
) -> list[str]:
    """``arena run``'s ids after ``--sample N --seed S`` and ``--verified-only``."""
    if n is None and not verified_only:
        return ids
    with green_client(url, token) as client:
        if n is not None:
            ids = select_refs(client, ids, None, n, seed)
        if verified_only:
            kept = verified_subset(client, ids)
            dropped = [r for r in ids if r not in kept]
            if dropped:
                console.print(f"--verified-only: leaving out {len(dropped)}: {', '.join(dropped)}")
            ids = kept
    return ids
