"""The optional report capability of a task kind: what the dashboard shows about a task beyond
its rows (the report the agent was given, the class tasks are grouped by, the source around a
location).

A kind that offers it (:class:`OffersReports`) is asked through this protocol only; for one that
does not, the dashboard shows no report and groups its tasks under the kind's name. All methods
block (files, archives): green calls them in threads and remembers the reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class TaskReport:
    """A task's report, as the agent was given it, with what the kind reads out of it."""

    title: str
    """What the report is, as a heading: ``Crash report``."""
    name: str
    """Its file name: ``error.txt``."""
    text: str
    group: str
    """The class the dashboard groups and filters tasks by (the bug class:
    ``heap-buffer-overflow``); ``unknown`` when the report does not say."""
    headline: str | None = None
    """One line saying what the report shows (``heap-buffer-overflow in png_read_row``)."""
    start: int = 0
    """Where in ``text`` its finding begins (ARVO: the sanitizer's ERROR line, above the first
    frame); the dashboard folds what comes before (a fuzzer's start-up lines)."""


@runtime_checkable
class OffersReports(Protocol):
    """A kind (class instance) whose tasks have a report and sources to show."""

    def report(self, ref_id: str) -> TaskReport | None:
        """The task's report (None when its source has none). May raise (a source that is
        down): the dashboard then shows none."""
        ...

    def position(self, report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
        """Where the answer lies relative to what the report shows (ARVO: the crash frame, a
        caller, the free or allocation stack, or off-stack); ``unknown`` when that cannot be
        said."""
        ...

    def sources(self, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        """The task's source files at these paths (the ones it has), as the agent saw them."""
        ...
