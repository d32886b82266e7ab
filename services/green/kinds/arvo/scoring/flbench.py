"""FLBench's fault-localization metrics, computed beside ARVO's own (``docs/scoring.md``, 3b).

FLBench (the benchmark of ``JianhongTu/faultloc-adapter``) scores the *set* of predicted spans
(every location of ``loc.json``, no rank, no top-k cut) against a ground truth of its own, one
entry per ``@@`` hunk of the fix:

- a hunk's ground-truth lines are its deleted lines (old-file numbers, as the header says); a
  hunk that only adds lines is anchored at the last context line before its first ``+`` (a
  hunk with no such line has none and does not count);
- files match by **basename** (``lib/a.c`` and ``src/a.c`` are one file ``a.c``, for the
  ground truth too). The ``_path`` variants match whole paths, rooting-invariantly, as
  faultloc-adapter's ``full_path`` does: both sides normalized (``./``, ``//``, a leading
  ``/``), and a predicted path that is not a ground-truth path names the one ground-truth path
  it is a suffix of, or that is a suffix of it, at a ``/`` (``/src/proj/lib/a.c`` names
  ``lib/a.c``); two such candidates name neither.

Over the points (file, line) of the predicted spans P and of the ground truth G:

- ``file_recall``: ground-truth files named by some span / ground-truth files;
- ``hunk_recall``: hunks with a line in P / hunks;
- ``line_recall`` = |G ∩ P| / |G|; ``line_precision`` = |G ∩ P| / |P|; ``line_f1`` their
  harmonic mean (0 when both are 0);
- ``flb_iou`` = |G ∩ P| over the size of the union of G and P (FLBench's ``iou``: one union
  over every file, unlike ARVO's best-span ``iou``).

``loc.json`` spans are 1-based and inclusive (``line_start..line_end``); FLBench's own
prediction format is ``[line_start, line_end)``: a location covers FLBench's
``[line_start, line_end + 1)``. Spans are kept as intervals, never expanded to points (a span
of a billion lines costs what a span of one does).
"""

from __future__ import annotations

import posixpath
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.green.kinds.arvo.scoring.gt_model import FLBHunk
from services.green.kinds.arvo.scoring.patch_text import _strip_prefix
from services.shared.loc import Location

FLB_METRICS = ("file_recall", "hunk_recall", "line_recall", "line_precision", "line_f1", "flb_iou")
"""FLBench's six, files matched by basename as FLBench does."""
PATH_SUFFIX = "_path"
FLB_PATH_METRICS = tuple(m + PATH_SUFFIX for m in FLB_METRICS)
"""The same six, files matched by whole (rooting-invariant) path."""
ALL_FLB_METRICS = FLB_METRICS + FLB_PATH_METRICS
_FLBENCH_NAMES = (*FLB_METRICS[:5], "iou")
"""The names FLBench gives them."""


# --- ground truth ---------------------------------------------------------------------------


def flb_hunks(parsed: Iterable[Iterable], files: Iterable[str]) -> list[FLBHunk]:
    """FLBench's ground truth: one :class:`FLBHunk` per hunk of the parsed patch (unidiff
    ``PatchedFile`` lists, one per commit of a series, read as one patch as FLBench does) whose
    old path is one of ``files`` (the files ARVO's ground truth counts: code files, tests and
    fuzzers only when nothing else changed)."""
    keep = set(files)
    out: list[FLBHunk] = []
    for commit in parsed:
        for pf in commit:
            old = _strip_prefix(pf.source_file, "a/")
            if old is None or old not in keep or pf.is_binary_file:
                continue
            for hunk in pf:
                lines, addition_only = _hunk_truth(hunk)
                if lines:
                    out.append(FLBHunk(file=old, lines=lines, addition_only=addition_only))
    return out


def _hunk_truth(hunk) -> tuple[list[int], bool]:
    """The hunk's deleted lines; else ([last context line before the first '+'], True); else
    ([], True)."""
    old = hunk.source_start
    deleted: list[int] = []
    anchor: int | None = None
    seen_plus = False
    for ln in hunk:
        if ln.line_type == "-":
            deleted.append(old)
            old += 1
        elif ln.line_type == "+":
            seen_plus = True
        elif ln.line_type == " ":
            if not seen_plus:
                anchor = old
            old += 1
    if deleted:
        return deleted, False
    return ([anchor] if anchor is not None else []), True


# --- files ----------------------------------------------------------------------------------


def basename(path: str) -> str:
    """FLBench's file identity: what follows the last ``/``."""
    return path.rsplit("/", 1)[-1]


def whole_path(path: str) -> str:
    """The ``_path`` variants' file identity: normalized, without a leading ``/``."""
    return posixpath.normpath(path).lstrip("/")


def path_names(predicted: Iterable[str], truth: Iterable[str]) -> dict[str, str]:
    """Each predicted path (by :func:`whole_path`) → the ground-truth path it names: itself when
    it is one, else the only ground-truth path that ends with ``/`` + it or that it ends with
    ``/`` + ; absent when none or several do."""
    gt = {whole_path(t) for t in truth}
    out: dict[str, str] = {}
    for raw in predicted:
        p = whole_path(raw)
        if p in out:
            continue
        if p in gt:
            out[p] = p
            continue
        hits = [g for g in gt if p.endswith("/" + g) or g.endswith("/" + p)]
        if len(hits) == 1:
            out[p] = hits[0]
    return out


# --- scores ---------------------------------------------------------------------------------


@dataclass
class _Covered:
    """Merged inclusive line intervals per file key: the predicted points P."""

    starts: dict[str, list[int]]
    ends: dict[str, list[int]]

    @classmethod
    def of(cls, spans: Iterable[tuple[str, int, int]]) -> _Covered:
        by_key: dict[str, list[tuple[int, int]]] = {}
        for key, start, end in spans:
            by_key.setdefault(key, []).append((start, end))
        starts: dict[str, list[int]] = {}
        ends: dict[str, list[int]] = {}
        for key, intervals in by_key.items():
            s_list: list[int] = []
            e_list: list[int] = []
            for start, end in sorted(intervals):
                if e_list and start <= e_list[-1] + 1:
                    e_list[-1] = max(e_list[-1], end)
                else:
                    s_list.append(start)
                    e_list.append(end)
            starts[key], ends[key] = s_list, e_list
        return cls(starts, ends)

    def size(self) -> int:
        return sum(
            e - s + 1
            for k, starts in self.starts.items()
            for s, e in zip(starts, self.ends[k], strict=True)
        )

    def covers(self, key: str, line: int) -> bool:
        starts = self.starts.get(key)
        if not starts:
            return False
        i = bisect_right(starts, line) - 1
        return i >= 0 and line <= self.ends[key][i]


def flb_scores(
    spans: Sequence[tuple[str, int, int]], hunks: Sequence[FLBHunk], *, full_path: bool = False
) -> dict[str, float]:
    """FLBench's six metrics (FLBench's names, ``iou`` for ``flb_iou``) of ``spans`` (file,
    first line, last line: inclusive, as in loc.json) against ``hunks``. Files by basename, or
    by whole path with ``full_path``. No hunk: every metric 0 (FLBench refuses such a task)."""
    if full_path:
        names = path_names((f for f, _, _ in spans), (h.file for h in hunks))

        def pred_key(path: str) -> str:
            p = whole_path(path)
            return names.get(p, p)

        gt_key = whole_path
    else:
        pred_key = gt_key = basename
    covered = _Covered.of((pred_key(f), s, e) for f, s, e in spans if e >= s)
    truth = {(gt_key(h.file), line) for h in hunks for line in h.lines}
    if not truth:
        return dict.fromkeys(_FLBENCH_NAMES, 0.0)
    gt_files = {gt_key(h.file) for h in hunks}
    pred_files = {pred_key(f) for f, _, _ in spans}
    hits = [any(covered.covers(gt_key(h.file), line) for line in h.lines) for h in hunks]
    inter = sum(covered.covers(k, line) for k, line in truth)
    n_pred = covered.size()
    recall = inter / len(truth)
    precision = inter / n_pred if n_pred else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    union = len(truth) + n_pred - inter
    return {
        "file_recall": len(gt_files & pred_files) / len(gt_files),
        "hunk_recall": sum(hits) / len(hits),
        "line_recall": recall,
        "line_precision": precision,
        "line_f1": f1,
        "iou": inter / union if union else 0.0,
    }


def flb_metrics(locations: Sequence[Location], hunks: Sequence[FLBHunk]) -> dict[str, float]:
    """Both families of one submission, keyed by metric name (:data:`ALL_FLB_METRICS`)."""
    spans = [(loc.file, loc.line_start, loc.line_end) for loc in locations]
    out: dict[str, float] = {}
    for suffix, full in (("", False), (PATH_SUFFIX, True)):
        values = flb_scores(spans, hunks, full_path=full)
        for ours, theirs in zip(FLB_METRICS, _FLBENCH_NAMES, strict=True):
            out[ours + suffix] = values[theirs]
    return out
