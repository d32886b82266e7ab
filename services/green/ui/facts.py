"""What the dashboard knows about a task id beyond its rows: its report, its group (the bug
class), sources, where the answer lies.

Asked of the task's kind through ``services/green/kinds/report.py`` (a kind that offers no
report has none, and its tasks are grouped under the kind's name), in a thread, and memoized:
the report of an id never changes.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from services.green.kinds.report import OffersReports, TaskReport
from services.green.tasks.orchestrator import Orchestrator
from services.shared.logging import get_logger

log = get_logger("services.green.ui")

CONTEXT_LINES = 4
"""Lines of source shown above and below a location."""
MAX_SNIPPET_LINES = 60
_SOURCE_CACHE = 16
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Snippet:
    file: str
    start: int
    lines: list[str]
    """Source lines from ``start`` (1-based)."""


class TaskFacts:
    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch
        self._reports: dict[tuple[str, str], TaskReport | None] = {}
        self._sources: OrderedDict[tuple[str, str, frozenset[str]], dict[str, bytes]] = (
            OrderedDict()
        )

    def _kind(self, kind: str) -> OffersReports | None:
        """The kind, when this green serves it and it offers reports."""
        found = self.orch.kinds.get(kind)
        return found if isinstance(found, OffersReports) else None

    def _report(self, kind: str, ref_id: str) -> TaskReport | None:
        key = (kind, ref_id)
        if key not in self._reports:
            offers, report = self._kind(kind), None
            if offers is not None:
                try:
                    report = offers.report(ref_id)
                except Exception as exc:  # unknown id, source down: show nothing, never fail
                    log.warning("ui.report_unavailable", ref_id=ref_id, error=str(exc))
            self._reports[key] = report
        return self._reports[key]

    async def report(self, kind: str, ref_id: str) -> TaskReport | None:
        """The report the agent was given (ARVO: ``error.txt``), or None."""
        key = (kind, ref_id)
        if key in self._reports:
            return self._reports[key]
        return await asyncio.to_thread(self._report, kind, ref_id)

    async def group(self, kind: str, ref_id: str) -> str:
        """The class the task is grouped by: its report's (``unknown`` when the report does not
        say or is missing); the kind's name for a kind that offers no report."""
        if self._kind(kind) is None:
            return kind
        report = await self.report(kind, ref_id)
        return report.group if report else UNKNOWN

    async def bug_classes(self, ids: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """(kind, id) -> :meth:`group`."""
        return {(kind, ref_id): await self.group(kind, ref_id) for kind, ref_id in ids}

    async def position(self, kind: str, ref_id: str, ground_truth: dict[str, Any] | None) -> str:
        """Where the answer lies relative to the report (ARVO: the fix on the crash stack)."""
        offers, report = self._kind(kind), await self.report(kind, ref_id)
        if offers is None or report is None:
            return UNKNOWN
        return offers.position(report, ground_truth)

    def _read_sources(self, kind: str, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        key = (kind, ref_id, paths)
        if key in self._sources:
            self._sources.move_to_end(key)
            return self._sources[key]
        offers = self._kind(kind)
        self._sources[key] = offers.sources(ref_id, paths) if offers else {}
        while len(self._sources) > _SOURCE_CACHE:
            self._sources.popitem(last=False)
        return self._sources[key]

    async def snippets(
        self, kind: str, ref_id: str, spans: list[tuple[str, int, int]]
    ) -> list[Snippet | None]:
        """The source around each (file, first line, last line); None where it is not known."""
        if not spans or self._kind(kind) is None:
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
