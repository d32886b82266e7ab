"""ARVO's report for the dashboard (``services/green/kinds/report.py``): ``error.txt`` with its
bug class and crash frame, where the fix lies on the crash stack, the vulnerable sources.

Read from the asset source's cache: the same files the task was prepared from.
"""

from __future__ import annotations

from typing import Any

from services.green.kinds.arvo.assets import AssetSource, check_archive
from services.green.kinds.arvo.crash import fix_position, report_start, source_frames
from services.green.kinds.report import TaskReport
from services.shared.sanitizer import parse_report, plain


def arvo_report(assets: AssetSource, ref_id: str) -> TaskReport:
    """``error.txt`` of the task (as plain text: a terminal's colour codes and CR gone), its bug
    class and the crash's innermost frame."""
    text = plain(assets.fetch(ref_id, "error.txt").read_bytes())
    crash = parse_report(text)
    frames = source_frames(crash)
    headline = f"{crash.bug_class} in {frames[0].function}" if frames else None
    return TaskReport(
        "Crash report", "error.txt", text, crash.bug_class, headline, report_start(text)
    )


def arvo_position(report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
    """One of ``crash.FIX_POSITIONS`` (``crash-frame``, ``caller``, ``free-stack``...), or
    ``unknown``: the words of the bundled tasks' ``task.toml``, so the plots group as reports do."""
    return fix_position(parse_report(report.text), ground_truth)


def arvo_sources(assets: AssetSource, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
    """The files of ``repo-vul.tar.gz`` at these paths (links escaping the tree skipped)."""
    archive = assets.fetch(ref_id, "repo-vul.tar.gz")
    return dict(check_archive(archive, escaping_symlinks="skip", read=paths).sources)
