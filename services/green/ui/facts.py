"""What the dashboard knows about a task id beyond its rows: crash report, bug class, sources.

Read from the asset source's cache (the same files the task was prepared from), in a thread,
and memoized: the report of an id never changes.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from services.green.kinds.arvo.assets import check_archive
from services.green.kinds.arvo.crash import CrashInfo, parse_report
from services.green.orchestrator import Orchestrator
from services.shared.logging import get_logger

log = get_logger("services.green.ui")

CONTEXT_LINES = 4
"""Lines of source shown above and below a location."""
MAX_SNIPPET_LINES = 60
_SOURCE_CACHE = 16


@dataclass(frozen=True)
class Snippet:
    file: str
    start: int
    lines: list[str]
    """Source lines from ``start`` (1-based)."""


class TaskFacts:
    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch
        self._reports: dict[tuple[str, str], str | None] = {}
        self._sources: OrderedDict[tuple[str, frozenset[str]], dict[str, bytes]] = OrderedDict()

    def _assets(self, kind: str):
        return getattr(self.orch.kinds.get(kind), "assets", None)

    def _report(self, kind: str, ref_id: str) -> str | None:
        key = (kind, ref_id)
        if key not in self._reports:
            assets, text = self._assets(kind), None
            if assets is not None:
                try:
                    text = assets.fetch(ref_id, "error.txt").read_text(errors="replace")
                except Exception as exc:  # unknown id, source down: show nothing, never fail
                    log.warning("ui.report_unavailable", ref_id=ref_id, error=str(exc))
            self._reports[key] = text
        return self._reports[key]

    async def report(self, kind: str, ref_id: str) -> str | None:
        """The crash report the agent was given (``error.txt``), or None."""
        key = (kind, ref_id)
        if key in self._reports:
            return self._reports[key]
        return await asyncio.to_thread(self._report, kind, ref_id)

    async def crash(self, kind: str, ref_id: str) -> CrashInfo | None:
        text = await self.report(kind, ref_id)
        return parse_report(text) if text else None

    async def bug_classes(self, ids: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """(kind, id) -> bug class; ids without a report are ``unknown``, other kinds their kind."""
        out: dict[tuple[str, str], str] = {}
        for kind, ref_id in ids:
            info = await self.crash(kind, ref_id) if self._assets(kind) else None
            out[(kind, ref_id)] = info.bug_class if info else kind if kind != "arvo" else "unknown"
        return out

    def _read_sources(self, kind: str, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        key = (ref_id, paths)
        if key in self._sources:
            self._sources.move_to_end(key)
            return self._sources[key]
        assets = self._assets(kind)
        archive = assets.fetch(ref_id, "repo-vul.tar.gz")
        info = check_archive(archive, escaping_symlinks="skip", read=paths)
        self._sources[key] = dict(info.sources)
        while len(self._sources) > _SOURCE_CACHE:
            self._sources.popitem(last=False)
        return self._sources[key]

    async def snippets(
        self, kind: str, ref_id: str, spans: list[tuple[str, int, int]]
    ) -> list[Snippet | None]:
        """The source around each (file, first line, last line); None where it is not known."""
        if not spans or self._assets(kind) is None:
            return [None] * len(spans)
        paths = frozenset(f for f, _, _ in spans if f)
        try:
            sources = await asyncio.to_thread(self._read_sources, kind, ref_id, paths)
        except Exception as exc:
            log.warning("ui.source_unavailable", ref_id=ref_id, error=str(exc))
            return [None] * len(spans)
        out: list[Snippet | None] = []
        for path, first, last in spans:
            raw = sources.get(path)
            if raw is None:
                out.append(None)
                continue
            lines = raw.decode("utf-8", errors="replace").splitlines()
            start = max(1, first - CONTEXT_LINES)
            end = min(len(lines), last + CONTEXT_LINES, start + MAX_SNIPPET_LINES - 1)
            out.append(Snippet(path, start, lines[start - 1 : end]))
        return out
