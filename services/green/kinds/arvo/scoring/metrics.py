"""ARVO's seven metrics, FLBench's beside them, and the score of one loc.json submission against
the ground truth (the run's means: ``shared/scores.py``, given :data:`METRICS`).

Per task (only the top :data:`TOP_K` = 5 locations count; each metric is 0 or 1 except IoU):

- ``file@k``: one of the top-k locations names a ground-truth file (whole normalized path).
- ``func@k``: one of the top-k locations, in a ground-truth file, names a function that
  encloses ground-truth lines of that file; a location without a function name is credited when
  its whole span lies inside such a function.
- ``line@k``: one of the top-k locations, in a ground-truth file, spans at most
  :data:`MAX_SPAN_LINES` = 50 lines and contains a ground-truth line of that file.
- ``iou``: the best intersection-over-union of line sets between a top-5 span and a
  ground-truth region of the same file.

FLBench's six (twice: files by basename, and by whole path with ``_path``) score the set of every
submitted location against FLBench's own ground truth: :mod:`.flbench`.

A missing submission scores 0 everywhere; a task whose ground truth is empty is not scorable
(``scorable=False``) and stays out of the means. ``docs/scoring.md`` has worked examples.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from services.green.kinds.arvo.scoring.cppnames import split_parts
from services.green.kinds.arvo.scoring.flbench import (
    ALL_FLB_METRICS,
    FLB_METRICS,
    PATH_SUFFIX,
    flb_metrics,
)
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth, GTFile, GTFunction, GTRegion
from services.green.kinds.arvo.scoring.names import is_macro_form, split_names, submitted_name
from services.shared.loc import ROOT_PREFIXES, Location, LocJson, normalize_path

OWN_METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou")
"""ARVO's own ranked metrics."""
METRICS = OWN_METRICS + ALL_FLB_METRICS
"""Every metric of a locate task, in report order (what green's aggregate of ARVO tasks
averages): ours, then FLBench's (basename, then ``_path``)."""
METRIC_FIELDS = (
    "file_at_1",
    "file_at_5",
    "func_at_1",
    "func_at_5",
    "line_at_1",
    "line_at_5",
    "iou",
    *ALL_FLB_METRICS,
)
"""The attribute names of :data:`METRICS`."""
CONTINUOUS = frozenset({"iou", *ALL_FLB_METRICS})
"""The metrics that are not hit/miss: fractions (FLBench's are, even where one task's value
happens to be 0 or 1)."""


class Metrics(BaseModel):
    """The nineteen numbers, named as in reports (``file@1``..., ``line_f1``...)."""

    model_config = ConfigDict(populate_by_name=True)

    file_at_1: float = Field(0.0, alias="file@1")
    file_at_5: float = Field(0.0, alias="file@5")
    func_at_1: float = Field(0.0, alias="func@1")
    func_at_5: float = Field(0.0, alias="func@5")
    line_at_1: float = Field(0.0, alias="line@1")
    line_at_5: float = Field(0.0, alias="line@5")
    iou: float = 0.0
    file_recall: float = 0.0
    hunk_recall: float = 0.0
    line_recall: float = 0.0
    line_precision: float = 0.0
    line_f1: float = 0.0
    flb_iou: float = 0.0
    file_recall_path: float = 0.0
    hunk_recall_path: float = 0.0
    line_recall_path: float = 0.0
    line_precision_path: float = 0.0
    line_f1_path: float = 0.0
    flb_iou_path: float = 0.0


class ScoreSummary(Metrics):
    """What the aggregate reads of a task's score (``services.shared.scores``): the metrics and
    whether they count."""

    scorable: bool = True
    """False when the ground truth is empty (empty patch, no code changes)."""
    submitted: bool = False
    """A valid loc.json was scored."""
    n_locations: int = 0
    """Locations in the submission (only the first 5 count)."""
    project: str | None = None
    """The bug's project: the cluster of the bootstrap (tasks of one project are not
    independent)."""


TOP_K = 5
MAX_SPAN_LINES = 50
MAX_NAME_CHARS = 4096
"""Only this much of a submitted ``function`` field is read (long C++ trace signatures fit)."""


# --- matching helpers -----------------------------------------------------------------------


def path_candidates(path: str, project: str | None) -> list[str]:
    """Normalized forms a submitted path may stand for, most literal first: the normalized path,
    then (when it starts with the project's folder, as paths relative to ``/src`` or
    ``src-vul`` do) the same without that folder."""
    norm = normalize_path(path, project)
    out = [norm]
    raw = path.strip().strip("`'\"").strip().replace("\\", "/")
    while raw.startswith("./"):
        raw = raw[2:]
    rooted = raw.startswith(ROOT_PREFIXES)  # the project folder was already dropped
    if project and not rooted and norm.startswith(project + "/"):
        out.append(norm[len(project) + 1 :])
    return out


def match_file(path: str, gt: GroundTruth, project: str | None) -> GTFile | None:
    """The ground-truth file a submitted path names, matching whole normalized paths only."""
    for cand in path_candidates(path, project):
        hit = gt.file(cand)
        if hit is not None:
            return hit
    return None


def function_names(text: str) -> list[tuple[str, str]]:
    """(unqualified, qualified) names a submitted ``function`` field may mean, read by
    :func:`.names.submitted_name`: ``foo``, ``foo()``, ``static int foo(int a)``, ``Foo::bar``,
    ``ns::Foo<T>::bar``, ``operator()``, ``Widget::operator bool() const``,
    ``PHP_FUNCTION(strlen)``; several names separated by ``,`` / ``/`` / ``or`` / ``and``."""
    out: list[tuple[str, str]] = []
    for part in split_names(text[:MAX_NAME_CHARS]):
        named = submitted_name(part)
        if named is not None:
            out.append(named)
    return out


def names_match(pred: tuple[str, str], gt: GTFunction) -> bool:
    """Unqualified names must be equal (case-sensitive, as in C); qualifiers are compared as far
    as both sides give them: ``bar`` matches ``ns::Foo::bar``, ``Foo::bar`` matches
    ``ns::Foo::bar`` and a C function ``bar``, ``Baz::bar`` does not match ``Foo::bar``."""
    p_name, p_qual = pred
    if p_name != gt.name:
        return False
    if is_macro_form(gt.qualified):  # macro-made function: the inner name is what counts
        return True
    a, b = split_parts(p_qual), split_parts(gt.qualified)
    n = min(len(a), len(b))
    return a[len(a) - n :] == b[len(b) - n :]


def _iou(start: int, end: int, region: GTRegion) -> float:
    inter = max(0, min(end, region.end) - max(start, region.start) + 1)
    if not inter:
        return 0.0
    union = (end - start + 1) + region.size - inter
    return inter / union


def _span(start: int, end: int) -> str:
    return f"{start}" if start == end else f"{start}-{end}"


# --- results --------------------------------------------------------------------------------


class LocationResult(BaseModel):
    """How one of the top-5 submitted locations fared."""

    rank: int
    file: str
    """As submitted."""
    normalized: str
    line_start: int
    line_end: int
    function: str | None = None
    matched_file: str | None = None
    file_match: bool = False
    function_match: bool = False
    line_match: bool = False
    iou: float = 0.0
    best_region: int | None = None
    """1-based index into :attr:`TaskScore.regions` of the region with the best IoU."""
    notes: list[str] = []


class RegionResult(BaseModel):
    """A ground-truth region and the ranks that found it."""

    index: int
    label: str
    file: str
    start: int
    end: int
    function: str | None = None
    line_matched_by: list[int] = []
    overlapped_by: list[int] = []
    best_iou: float = 0.0


class TaskScore(ScoreSummary):
    """The score of one task. ``model_dump(by_alias=True)`` / :meth:`to_dict` give JSON with
    the metric names as keys (``"file@1"``, ...)."""

    locations: list[LocationResult] = []
    regions: list[RegionResult] = []
    gt_files: list[str] = []
    gt_flags: list[str] = []
    explanation: list[str] = []

    def metrics(self) -> dict[str, float]:
        return {k: v for k, v in self.model_dump(by_alias=True).items() if k in METRICS}

    def to_dict(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")


# --- scoring --------------------------------------------------------------------------------


def _function_match(loc: Location, gtf: GTFile) -> tuple[bool, str]:
    if loc.function and loc.function.strip():
        preds = function_names(loc.function)
        for fn in gtf.functions:
            for pred in preds:
                if names_match(pred, fn):
                    return True, f"function {loc.function!r} is {fn.qualified}"
        known = ", ".join(sorted({f.qualified for f in gtf.functions})) or "none known"
        return False, f"function {loc.function!r} is not a changed function (changed: {known})"
    for fn in gtf.functions:
        if fn.contains(loc.line_start, loc.line_end):
            return True, (
                f"no function named, but lines {_span(loc.line_start, loc.line_end)} lie inside "
                f"{fn.qualified} ({fn.start_line}-{fn.end_line})"
            )
    return False, "no function named and the span is not inside a changed function"


def score(submission: LocJson | None, gt: GroundTruth, project: str | None = None) -> TaskScore:
    """Score a submission (None: no valid loc.json) against a task's ground truth.

    ``project`` is the project folder name (``ArchiveInfo.project``); it lets paths such as
    ``/src/<project>/x.c`` and ``<project>/x.c`` match ``x.c``.
    """
    regions = gt.regions
    result = TaskScore(
        scorable=not gt.empty,
        project=project,
        gt_files=[f.path for f in gt.files],
        gt_flags=list(gt.flags),
        regions=[
            RegionResult(
                index=i,
                label=r.label(),
                file=r.file,
                start=r.start,
                end=r.end,
                function=r.function.qualified if r.function else None,
            )
            for i, r in enumerate(regions, 1)
        ],
    )
    why = result.explanation
    if gt.empty:
        why.append(
            "not scorable: the ground truth is empty ("
            + (", ".join(gt.flags) or "no changed code lines")
            + "); all metrics are 0 and the task stays out of the means"
        )
    if submission is None:
        why.append("no valid submission: every metric is 0")
        return result
    result.submitted = True
    result.n_locations = n = len(submission.locations)
    if n > TOP_K:
        ignored = f"rank {TOP_K + 1} is" if n == TOP_K + 1 else f"ranks {TOP_K + 1}-{n} are"
        why.append(f"{n} locations submitted; only the top {TOP_K} are scored ({ignored} ignored)")
    scorer = _LocationScorer(gt, project, dict(zip(map(id, regions), result.regions, strict=True)))
    for rank, loc in enumerate(submission.locations[:TOP_K], 1):
        lr, line = scorer.score(rank, loc)
        why.append(line)
        result.locations.append(lr)
    _totals(result)
    why.extend(_region_notes(result))
    if not gt.empty:
        why.append(_flbench(result, submission, gt))
    if not result.scorable:
        for k in METRIC_FIELDS:
            setattr(result, k, 0.0)
    return result


class _LocationScorer:
    """Scores one ranked location against the ground truth, crediting the regions it finds."""

    def __init__(
        self, gt: GroundTruth, project: str | None, region_result: dict[int, RegionResult]
    ) -> None:
        self.gt = gt
        self.project = project
        self.region_result = region_result
        """The result entry of each ground-truth region, by ``id()`` of the region."""
        self.basenames = {f.path.rsplit("/", 1)[-1]: f.path for f in gt.files}

    def score(self, rank: int, loc: Location) -> tuple[LocationResult, str]:
        """The location's result and its explanation line."""
        norm = normalize_path(loc.file, self.project)
        lr = LocationResult(
            rank=rank,
            file=loc.file,
            normalized=norm,
            line_start=loc.line_start,
            line_end=loc.line_end,
            function=loc.function,
        )
        where = f"rank {rank} {loc.file}:{_span(loc.line_start, loc.line_end)}"
        if norm != loc.file:
            where += f" (normalized: {norm or '(empty)'})"
        gtf = match_file(loc.file, self.gt, self.project)
        if gtf is None:
            base = norm.rsplit("/", 1)[-1]
            if base in self.basenames:
                lr.notes.append(
                    f"same file name as the changed file {self.basenames[base]!r} but a "
                    "different path: files match by whole path, never by basename"
                )
            else:
                changed = ", ".join(f.path for f in self.gt.files) or "none"
                lr.notes.append(f"not a changed file (changed: {changed})")
            return lr, f"{where}: file ✗ — {lr.notes[-1]}"
        lr.matched_file = gtf.path
        lr.file_match = True
        parts = [f"file ✓ ({gtf.path})"]
        lr.function_match, fn_note = _function_match(loc, gtf)
        lr.notes.append(fn_note)
        parts.append(("function ✓ — " if lr.function_match else "function ✗ — ") + fn_note)
        if line_note := _line_credit(loc, gtf, lr):
            parts.append(line_note)
        parts.append(self._iou_credit(rank, loc, gtf, lr))
        return lr, f"{where}: " + "; ".join(parts)

    def _iou_credit(self, rank: int, loc: Location, gtf: GTFile, lr: LocationResult) -> str:
        n_lines = loc.line_end - loc.line_start + 1
        best_iou, best = 0.0, None
        for region in gtf.regions:
            value = _iou(loc.line_start, loc.line_end, region)
            if value == 0:
                continue
            rr = self.region_result[id(region)]
            rr.overlapped_by.append(rank)
            rr.best_iou = max(rr.best_iou, round(value, 6))
            if n_lines <= MAX_SPAN_LINES:
                rr.line_matched_by.append(rank)
            if value > best_iou:
                best_iou, best = value, rr
        if best is None:
            return "IoU 0 (overlaps no region)"
        lr.iou = round(best_iou, 6)
        lr.best_region = best.index
        return f"IoU {best_iou:.2f} with region R{best.index} {best.label}"


def _line_credit(loc: Location, gtf: GTFile, lr: LocationResult) -> str | None:
    """line@k for one location in a ground-truth file: sets ``lr.line_match``; its note."""
    n_lines = loc.line_end - loc.line_start + 1
    hit_lines = [x for x in gtf.lines if loc.line_start <= x <= loc.line_end]
    if n_lines > MAX_SPAN_LINES:
        note = f"span of {n_lines} lines is longer than {MAX_SPAN_LINES}: no line credit"
        lr.notes.append(note)
        return "line ✗ — " + note
    if hit_lines:
        lr.line_match = True
        shown = ", ".join(map(str, hit_lines[:5])) + (" …" if len(hit_lines) > 5 else "")
        return f"line ✓ — contains changed line(s) {shown}"
    if not gtf.lines:
        return None
    nearest = min(gtf.lines, key=lambda x: min(abs(x - loc.line_start), abs(x - loc.line_end)))
    dist = min(abs(nearest - loc.line_start), abs(nearest - loc.line_end))
    note = f"contains no changed line (nearest: {nearest}, {dist} lines away)"
    lr.notes.append(note)
    return "line ✗ — " + note


def _totals(result: TaskScore) -> None:
    first = result.locations[0] if result.locations else None
    result.file_at_1 = float(bool(first and first.file_match))
    result.func_at_1 = float(bool(first and first.function_match))
    result.line_at_1 = float(bool(first and first.line_match))
    result.file_at_5 = float(any(x.file_match for x in result.locations))
    result.func_at_5 = float(any(x.function_match for x in result.locations))
    result.line_at_5 = float(any(x.line_match for x in result.locations))
    result.iou = max((x.iou for x in result.locations), default=0.0)


def _flbench(result: TaskScore, submission: LocJson, gt: GroundTruth) -> str:
    """Sets FLBench's metrics of the whole submission; the sentence that sums them up."""
    for name, value in flb_metrics(submission.locations, gt.flb_hunks).items():
        setattr(result, name, value)
    n = len(submission.locations)
    if not gt.flb_hunks:
        return (
            "FLBench: its rule finds no ground-truth line in this fix (a hunk that only adds "
            "has no context line before it): its metrics are 0"
        )
    by = [
        ", ".join(f"{m} {getattr(result, m + suffix):.2f}" for m in FLB_METRICS)
        for suffix in ("", PATH_SUFFIX)
    ]
    return (
        f"FLBench, over the set of all {n} location(s) and its {len(gt.flb_hunks)} hunk(s): "
        f"{by[0]} (files by basename); {by[1]} (by whole path, the _path metrics)"
    )


def _region_notes(result: TaskScore) -> list[str]:
    notes = []
    for rr in result.regions:
        if rr.line_matched_by:
            notes.append(
                f"region R{rr.index} {rr.label}: found by rank(s) "
                + ", ".join(map(str, rr.line_matched_by))
                + f" (best IoU {rr.best_iou:.2f})"
            )
        elif rr.overlapped_by:
            notes.append(
                f"region R{rr.index} {rr.label}: only overlapped by spans longer than "
                f"{MAX_SPAN_LINES} lines (rank(s) {', '.join(map(str, rr.overlapped_by))})"
            )
        else:
            notes.append(f"region R{rr.index} {rr.label}: not found by any of the top {TOP_K}")
    return notes
